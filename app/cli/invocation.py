"""How a person runs this CLI again from their shell, for the commands it suggests.

``make demo`` runs ``.venv/bin/handoff`` without activating the virtual environment, so a
suggested ``handoff show …`` would fail in the user's shell ("command not found") or, worse,
run another installation. The suggestion names the command that started this process
unless ``handoff`` on PATH is that very program.
"""

from __future__ import annotations

import os
import shutil
import sys
from functools import cache
from pathlib import Path


@cache
def command() -> str:
    """``handoff`` if PATH finds this very program under that name, else its path.

    The path is relative to the working folder when the program lies below it.
    """
    script = Path(sys.argv[0])
    if script.name != "handoff":  # python -m app.cli, or an embedding program
        return f"{Path(sys.executable).name} -m app.cli"
    running = script.resolve()
    found = shutil.which("handoff")
    if found is not None and Path(found).resolve() == running:
        return "handoff"
    relative = os.path.relpath(running.parent / script.name, Path.cwd())
    return relative if not relative.startswith("..") else str(running.parent / script.name)
