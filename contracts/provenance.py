"""Who produced a piece of work, and at which step of which thread."""

from __future__ import annotations

from pydantic import Field

from contracts.base import Contract


class Provenance(Contract):
    """Origin of an item, so every fact and decision can be traced to a step or a person."""

    producer: str = Field(
        max_length=100,
        description="Producer: an agent node id (research, writer, reviewer, ...) or 'human'.",
    )
    node: str = Field(max_length=100, description="Graph node that recorded the item.")
    step: int | None = Field(
        default=None, ge=-1, description="LangGraph superstep (of this thread) that recorded it."
    )
