"""The ``handoff`` command: thin commands over the Python API.

``base`` holds the Typer app and turns errors into exit codes; the commands register on it
from ``running`` (they move threads), ``revising`` (it changes a task), ``reading`` (they
read them), ``pruning`` (it removes ended ones) and ``tools``; options several commands
share are declared once in ``options``.
"""

from __future__ import annotations

from app.cli.base import cli

# Commands register on import, and `handoff --help` lists them in that order.
# isort: split
from app.cli import running

# isort: split
from app.cli import revising

# isort: split
from app.cli import reading

# isort: split
from app.cli import pruning

# isort: split
from app.cli import tools

__all__ = ["cli", "main", "pruning", "reading", "revising", "running", "tools"]


def main() -> None:
    """Console-script entry point."""
    cli()
