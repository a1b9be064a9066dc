"""What a finished step says of itself: the one-line progress every way in reports."""

from __future__ import annotations

import json
from typing import Any

from contracts import VersionedContract

PAUSED = "paused"
"""The step name a pause reports (LangGraph streams it as ``__interrupt__``)."""


BREAKPOINT = "breakpoint"
"""What a pause at a static breakpoint (no ``interrupt()`` called) reports as written."""

CUSTOM_EVENT = "__custom__"
"""The progress callback's name for what a node sent with LangGraph's ``get_stream_writer()``
(``stream_mode="custom"``), given as ``{"event": ...}``."""


def step_summary(node: str, values: dict[str, Any]) -> tuple[str, str]:
    """The step's name and the summaries of the contracts it wrote, joined by ``·``.

    The handoff envelope is left out: it restates what the other contracts say. The CLI
    prints this per node; the A2A server sends it as a working status update.
    """
    if node == "__interrupt__":
        return PAUSED, "at a breakpoint" if values.get(
            BREAKPOINT
        ) else "waiting for a human decision"
    if node == CUSTOM_EVENT:  # a node's own progress, as it sent it
        event = values["event"]
        return "progress", event if isinstance(event, str) else json.dumps(event, default=str)
    summary = " · ".join(
        text
        for channel, value in values.items()
        if channel != "handoff" and isinstance(value, VersionedContract)
        for text in [value.summary()]
        if text
    )
    return node, summary
