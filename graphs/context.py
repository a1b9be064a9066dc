"""Run-scoped services handed to nodes through ``Runtime[RunContext]``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from graphs.ports import (
    ArtifactStore,
    ResearchAgent,
    ReviewerAgent,
    RunLedger,
    SourceProbe,
    WriterAgent,
)


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def no_fault(point: str) -> None:
    """The default fault hook does nothing; tests and the app may inject one."""


@dataclass(frozen=True)
class RunContext:
    """Everything a node needs besides state. Not persisted: pass it on every resume."""

    store: ArtifactStore
    research: ResearchAgent
    writer: WriterAgent
    reviewer: ReviewerAgent
    ledger: RunLedger
    sources: SourceProbe
    clock: Callable[[], datetime] = field(default=utc_now)
    fault: Callable[[str], None] = field(default=no_fault)
    sleep: Callable[[float], None] = field(default=time.sleep)
    backoff_seconds: float = 0.2
    """First retry delay after a transient error; doubles per attempt (capped at 5 s)."""
