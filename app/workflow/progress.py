"""What a finished step says of itself: the one-line progress every way in reports."""

from __future__ import annotations

from typing import Any

from contracts import VersionedContract

PAUSED = "paused"
"""The step name a pause reports (LangGraph streams it as ``__interrupt__``)."""


def step_summary(node: str, values: dict[str, Any]) -> tuple[str, str]:
    """The step's name and the summaries of the contracts it wrote, joined by ``·``.

    The handoff envelope is left out: it restates what the other contracts say. The CLI
    prints this per node; the A2A server sends it as a working status update.
    """
    if node == "__interrupt__":
        return PAUSED, "waiting for a human decision"
    summary = " · ".join(
        text
        for channel, value in values.items()
        if channel != "handoff" and isinstance(value, VersionedContract)
        for text in [value.summary()]
        if text
    )
    return node, summary
