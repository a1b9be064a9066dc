"""Where a run's trace hooks in: the node runner and the tool boundary call these, nothing more.

``graphs/`` knows no tracing library. The app gives the run context a ``RunTrace``
(OpenTelemetry when the ``OTEL_*`` environment asks for it, ``app/tracing.py``); without
one, every hook is a shared no-op, so a run with tracing off makes no span object at all.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Protocol

from contracts import NodeRun, ToolReceipt
from graphs.ports import StepInfo


class AttemptTrace(Protocol):
    """The span of one node attempt, open from its ledger row's start to its end."""

    def tool(self, receipt: ToolReceipt, kind: str | None) -> None:
        """A tool call of this attempt ended (answered or refused), as its receipt says."""
        ...

    def ended(self, record: NodeRun) -> None:
        """The attempt ended, as its finished ledger row says."""
        ...


class RunTrace(Protocol):
    """A run's tracing: a span per run (``run``) and per node attempt (``attempt``)."""

    def run(self, thread_id: str) -> contextlib.AbstractContextManager[object]:
        """Held while the caller drives the graph on ``thread_id`` once (a run or a resume)."""
        ...

    def attempt(self, step: StepInfo, record: NodeRun) -> AttemptTrace:
        """An attempt began (its ledger row ``record`` is written as running)."""
        ...


class Untraced:
    """Tracing off: every hook does nothing and makes nothing."""

    def run(self, thread_id: str) -> contextlib.AbstractContextManager[object]:
        """Nothing to hold."""
        return contextlib.nullcontext()

    def attempt(self, step: StepInfo, record: NodeRun) -> AttemptTrace:
        """The one shared no-op attempt."""
        return self

    def tool(self, receipt: ToolReceipt, kind: str | None) -> None:
        """Nothing to record."""

    def ended(self, record: NodeRun) -> None:
        """Nothing to end."""


UNTRACED = Untraced()
"""The run context's default trace."""

TRACED_ATTEMPT: ContextVar[AttemptTrace | None] = ContextVar("handoff_traced_attempt", default=None)
"""The attempt being traced in this context, set by a tracing ``RunTrace`` for as long as the
attempt runs: the tool boundary (and the app's model calls) put their spans under it without
being handed it. None when tracing is off."""
