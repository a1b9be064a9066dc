"""Where fault injection acts: a run's services, wrapped so their calls name each node's points.

The node runner knows nothing of faults. Each point a ``HANDOFF_FAULT`` rule may name is a
moment the runner already marks by calling a service, so only a run that injects faults
gets its services wrapped (``with_faults``, which ``app.services.build_context`` applies
when the setting is present), and the hook rides on those calls:

* ``start``: the node begins (``RunContext.node_running`` is entered), before it reads
  the audit or does any work;
* ``attempt``: an attempt's work begins, right after its ledger row says it is running
  (the runner opens the store's batch for the attempt's puts);
* ``after_artifact``: the node has stored an artifact (each ``put`` that returns);
* ``before_write`` and ``after_write``: a confirmed write tool call is about to run (the
  ledger has no record of it), and it ran but is not recorded yet (the ledger's
  ``tool_effect`` and ``record_tool_effect``);
* ``before_return``: the node's attempt is recorded as succeeded (the ledger's ``finish``
  of its own, not reused, record returned), before LangGraph sees the result.

The node a service call belongs to is the one whose ``node_running`` block it runs in,
kept in a context variable (LangGraph runs parallel branch tasks each in a context of its
own). A branch task's point is named by node, then by key: ``research:start``, then
``research[q-2]:start``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from contracts import ArtifactKind, ArtifactRef, NodeRun, RefStatus
from graphs import ArtifactStore, RunContext, RunLedger, StepInfo
from graphs.budget import Tally

Hook = Callable[[str], None]
"""Called with ``<node>:<point>`` (and ``<node>[<key>]:<point>``) at every point reached."""
NodeRunning = Callable[[StepInfo], AbstractContextManager[object]]

_RUNNING: ContextVar[StepInfo | None] = ContextVar("handoff_fault_step", default=None)
"""The step whose node is running in this context, if any."""
_BATCHED: ContextVar[bool] = ContextVar("handoff_fault_batched", default=False)
"""Whether this context is inside a store batch already (only the outermost is an attempt)."""


def with_faults(context: RunContext, hook: Hook) -> RunContext:
    """The same services, calling ``hook`` at every fault point a node reaches."""
    points = Points(hook)
    return replace(
        context,
        ledger=FaultingLedger(context.ledger, points),
        store=FaultingStore(context.store, points),
        node_running=points.running(context.node_running),
    )


@dataclass(frozen=True)
class Points:
    """Names the point the node running in this context reached, and calls the hook."""

    hook: Hook

    def reached(self, point: str) -> None:
        """Call the hook for ``point`` of the running node (outside a node: nothing)."""
        step = _RUNNING.get()
        if step is None:
            return
        self.hook(f"{step.node}:{point}")
        if step.branch is not None:
            self.hook(f"{step.node}[{step.branch}]:{point}")

    def running(self, inner: NodeRunning) -> NodeRunning:
        """``inner``, which also names the node it holds for the services in its block."""

        @contextlib.contextmanager
        def node_running(step: StepInfo) -> Iterator[None]:
            with inner(step):
                token = _RUNNING.set(step)
                try:
                    self.reached("start")
                    yield
                finally:
                    _RUNNING.reset(token)

        return node_running

    def finished(self, run: NodeRun) -> None:
        """``before_return`` when the running node's own attempt is recorded as succeeded.

        A reused attempt did no work, and another record written inside a node (the run's
        choices) is no attempt of it.
        """
        step = _RUNNING.get()
        if step is not None and run.node_id == step.node:
            if run.status == "succeeded" and not run.reused:
                self.reached("before_return")


class FaultingStore:
    """An artifact store whose puts reach ``after_artifact`` and whose batch ``attempt``."""

    def __init__(self, inner: ArtifactStore, points: Points) -> None:
        self._inner = inner
        self._points = points

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content, then reach ``after_artifact``."""
        ref = self._inner.put(artifact_id, kind, content, media_type)
        self._points.reached("after_artifact")
        return ref

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Reach ``attempt`` (outermost block only), then the store's own block."""
        if not _BATCHED.get():
            self._points.reached("attempt")
        token = _BATCHED.set(True)
        try:
            with self._inner.batch():
                yield
        finally:
            _BATCHED.reset(token)

    def get(self, ref: ArtifactRef) -> bytes:
        """The bytes of exactly that revision."""
        return self._inner.get(ref)

    def head(self, artifact_id: str) -> ArtifactRef | None:
        """The latest revision, if any."""
        return self._inner.head(artifact_id)

    def history(self, artifact_id: str) -> list[ArtifactRef]:
        """Every revision, oldest first."""
        return self._inner.history(artifact_id)

    def verify(self, ref: ArtifactRef) -> RefStatus:
        """fresh, stale, tampered or missing."""
        return self._inner.verify(ref)


class FaultingLedger:
    """A run ledger whose succeeded finish of the running node reaches ``before_return``."""

    def __init__(self, inner: RunLedger, points: Points) -> None:
        self._inner = inner
        self._points = points

    def start(self, thread_id: str, run: NodeRun) -> int:
        """Record an attempt that is starting."""
        return self._inner.start(thread_id, run)

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Store the attempt's final record, then reach ``before_return`` if it succeeded."""
        self._inner.finish(thread_id, seq, run, result)
        self._points.finished(run)

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread."""
        return self._inner.runs(thread_id)

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of a succeeded attempt with this input."""
        return self._inner.result(thread_id, node_id, input_hash)

    def latest_result(self, thread_id: str, node_id: str) -> str | None:
        """The stored update of the node's latest succeeded attempt."""
        return self._inner.latest_result(thread_id, node_id)

    def tool_effect(self, thread_id: str, call_id: str) -> str | None:
        """What a write call that ran did; none yet reaches ``before_write`` (it runs next)."""
        effect = self._inner.tool_effect(thread_id, call_id)
        if effect is None:
            self._points.reached("before_write")
        return effect

    def record_tool_effect(self, thread_id: str, call_id: str, effect: str) -> None:
        """Reach ``after_write`` (the call ran), then record it."""
        self._points.reached("after_write")
        self._inner.record_tool_effect(thread_id, call_id, effect)

    def tally(
        self, thread_id: str, node_id: str, input_hash: str, fanned: Sequence[str] = ()
    ) -> Tally:
        """The thread's records summed for a visit."""
        return self._inner.tally(thread_id, node_id, input_hash, fanned)
