"""Durations as people type them for retention (``30d``, ``12h``, ``90m``) and read them."""

from __future__ import annotations

import re
from datetime import timedelta

from graphs.errors import UsageError

UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(\d{1,9})([dhms])")


class InvalidDuration(UsageError):
    """A duration that is not a whole number and one unit: exit code 2, nothing done."""


def parse_duration(text: str, name: str) -> timedelta:
    """``30d`` as a timedelta; ``name`` (the flag or setting) is what an error names."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise InvalidDuration(
            f"{name}: invalid duration {text!r}; expected a whole number and one unit, "
            "d (days), h (hours), m (minutes) or s (seconds), e.g. 30d, 12h, 90m"
        )
    return timedelta(seconds=int(match[1]) * UNITS[match[2]])


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
