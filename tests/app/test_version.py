"""``handoff --version`` and the A2A card name the installed distribution's version."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from app.cli import cli
from app.version import DISTRIBUTION, package_version


def test_handoff_version_prints_the_installed_version_and_nothing_else() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"handoff {version(DISTRIBUTION)}\n"


def test_version_needs_no_command_and_wins_over_one() -> None:
    result = CliRunner().invoke(cli, ["--version", "threads"])
    assert result.exit_code == 0 and result.output.startswith("handoff "), result.output


def test_the_version_is_the_distribution_s() -> None:
    assert package_version() == version(DISTRIBUTION)
