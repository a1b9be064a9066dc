"""What the thread readers return: where a thread stands, one row of the list."""

from __future__ import annotations

from dataclasses import dataclass

from contracts import (
    FreshnessReport,
    RunOutcome,
)


@dataclass(frozen=True)
class ThreadStatus:
    """Where a thread stands, from its latest checkpoint."""

    thread_id: str
    next_nodes: tuple[str, ...]
    outcome: RunOutcome | None
    checkpoints: int
    step: int | None
    draft_revision: int | None
    verdict: str | None
    fact_count: int | None
    current: RunOutcome
    """What :meth:`Workflow.outcome` reports (the recorded outcome, or INPUT_REQUIRED with
    the request, or WORKING), from the same read: ``handoff status`` prints both."""
    freshness: FreshnessReport | None = None
    updated_at: str | None = None
    """When its latest checkpoint was written (ISO 8601, UTC)."""
    task_version: int | None = None
    """The version of the task it serves (``handoff revise`` makes the next one)."""


@dataclass(frozen=True)
class ThreadSummary:
    """One row of the thread list: what ``handoff threads`` prints of a thread."""

    thread_id: str
    outcome: RunOutcome
    step: int | None
    next_nodes: tuple[str, ...]
    updated_at: str | None
    """When its latest checkpoint was written (ISO 8601, UTC)."""
