"""The installed distribution's version: what ``handoff --version`` and the A2A card say."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "handoff-workflow"


def package_version() -> str:
    """The installed distribution's version (a source checkout without it says so)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"
