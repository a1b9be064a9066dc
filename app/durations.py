"""Durations as people type them for retention (``30d``, ``12h``, ``90m``) and read them."""

from __future__ import annotations

from datetime import timedelta

from contracts.base import short_duration
from graphs.errors import UsageError

UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


class InvalidDuration(UsageError):
    """A duration that is not whole numbers of units: exit code 2, nothing done."""


def parse_duration(text: str, name: str) -> timedelta:
    """``30d`` as a timedelta; ``name`` (the flag or setting) is what an error names."""
    span = short_duration(text)
    if span is None:
        raise InvalidDuration(
            f"{name}: invalid duration {text!r}; expected whole numbers of d (days), h (hours), "
            "m (minutes) or s (seconds), e.g. 30d, 12h, 90m or 1h30m"
        )
    return span


def describe_duration(span: timedelta) -> str:
    """A span in its largest unit and the next: ``31d 4h``, ``2h 0m``, ``45s``."""
    left = max(0, int(span.total_seconds()))
    parts: list[str] = []
    for unit, seconds in UNITS.items():
        if parts or left >= seconds or unit == "s":
            parts.append(f"{left // seconds}{unit}")
            left %= seconds
        if len(parts) == 2:
            break
    return " ".join(parts)
