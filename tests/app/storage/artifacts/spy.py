"""Watching a store's fsyncs: which files and folders it makes durable, and when."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def recorded_calls(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, describe: Callable[[Any], str]
) -> list[str]:
    """Every later call of ``owner.<name>`` described, in order; each call still goes through.

    The list fills as the store works, so a test can read it inside a batch and after.
    """
    calls: list[str] = []
    real = getattr(owner, name)

    def record(argument: Any) -> None:
        calls.append(describe(argument))
        real(argument)

    monkeypatch.setattr(owner, name, record)
    return calls
