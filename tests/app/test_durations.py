"""Durations as people type them for retention, and as the CLI prints an age."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.durations import InvalidDuration, describe_duration, parse_duration
from graphs.errors import ExitCode


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("45s", timedelta(seconds=45)),
        (" 0d ", timedelta(0)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d12h", timedelta(days=2, hours=12)),
    ],
)
def test_whole_numbers_of_units_are_the_span_they_say(typed: str, meant: timedelta) -> None:
    assert parse_duration(typed, "--older-than") == meant


@pytest.mark.parametrize("typed", ["", "30", "d", "30 d", "1.5h", "-1d", "30D", "30m1h", "P30D"])
def test_anything_else_is_refused_naming_the_flag_and_the_form(typed: str) -> None:
    with pytest.raises(InvalidDuration) as refused:
        parse_duration(typed, "--older-than")
    assert refused.value.exit_code == ExitCode.USAGE
    assert refused.value.message.startswith(f"--older-than: invalid duration {typed!r}; expected")
    assert "e.g. 30d, 12h, 90m" in refused.value.message


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0s"), (45, "45s"), (3600, "1h 0m"), (3725, "1h 2m"), (31 * 86400 + 4 * 3600, "31d 4h")],
)
def test_an_age_shows_its_largest_unit_and_the_next(seconds: int, shown: str) -> None:
    assert describe_duration(timedelta(seconds=seconds)) == shown
