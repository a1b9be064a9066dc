"""Moving a thread: run a new one, resume it (with a decision), cancel it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from langgraph.graph import END
from langgraph.types import Command, StreamMode

from app.errors import (
    DecisionRequired,
    InvalidDecision,
    NotWaiting,
    RequestExpired,
    ThreadExists,
    ThreadFinished,
    ThreadNotFound,
    UnknownNode,
)
from app.workflow.decisions import check_decision, pause_of
from app.workflow.guard import WriteGuard
from app.workflow.ids import check_thread_id, new_thread_id
from app.workflow.opened import Opened, thread_config
from app.workflow.progress import BREAKPOINT, CUSTOM_EVENT
from app.workflow.reading import ThreadReader, request_of
from contracts import (
    DecisionLog,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    HumanDecision,
    HumanRequest,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs import RunContext
from graphs.admission import admit
from graphs.boundary import read
from graphs.errors import WiringError
from graphs.graph import routed
from graphs.human import expired_decision, has_expired
from graphs.node_runner import record_event
from graphs.wiring import Wiring, targets

ProgressCallback = Callable[[str, dict[str, Any]], None]
"""Called with each node's name and what it wrote as it finishes; with ``CUSTOM_EVENT`` and
``{"event": ...}`` for what a node sends with LangGraph's ``get_stream_writer()``."""

ABANDONED = "attempt did not finish: its process ended before recording a result"
"""What an attempt left running by a process that died is recorded as, before a new run."""


Breakpoints = tuple[tuple[str, ...], tuple[str, ...]]
"""The nodes a run stops before, and after: LangGraph's static breakpoints, for one run."""

Returned = TypeVar("Returned")

Modes = StreamMode | Sequence[StreamMode]
"""What a caller streams a run in: one of LangGraph's stream modes, or a list of them."""

Streamed = Generator[Any, None, RunOutcome]
"""A run as it goes: what LangGraph streams in the modes asked for, then the run's outcome
as the generator's return value (``outcome = yield from ...``, or ``drained``)."""


class Runner:
    """Starting, continuing and ending threads: every run of the compiled graph is here.

    The caller holds the thread's lock (``app.workflow.access.one_writer``): what is checked
    here stays true until the run is done.
    """

    def __init__(self, opened: Opened, reader: ThreadReader, guard: WriteGuard | None) -> None:
        self.opened = opened
        self.reader = reader
        self.guard = guard

    def run(
        self,
        task: TaskSpec | str,
        thread_id: str,
        on_progress: ProgressCallback | None,
        breakpoints: Breakpoints = ((), ()),
        stream_mode: Modes | None = None,
    ) -> Streamed:
        """Refused before any write: a held or existing thread, a refused task or breakpoint.

        Yields what LangGraph streams in ``stream_mode`` (nothing without one), and returns
        the run's outcome: ``drained`` runs it to that outcome.
        """
        self.refuse_if_held(thread_id, "nothing was run")
        self.check_breakpoints(breakpoints)
        spec, thread = self.new_thread(task, thread_id)
        return (
            yield from self.drive(
                {"task": spec},
                thread,
                on_progress,
                breakpoints=breakpoints,
                stream_mode=stream_mode,
            )
        )

    def check_breakpoints(self, breakpoints: Breakpoints) -> None:
        """Each breakpoint names a node of this graph, else UnknownNode listing them."""
        nodes = [spec.name for spec, _ in self.opened.wiring]
        for flag, names in zip(("interrupt_before", "interrupt_after"), breakpoints, strict=True):
            unknown = [name for name in names if name not in nodes]
            if unknown:
                raise UnknownNode(
                    f"{flag} names {unknown}, no node of graph {self.opened.graph_id!r}; "
                    f"nodes: {', '.join(nodes)}; nothing was run"
                )

    def new_thread(self, task: TaskSpec | str, thread_id: str | None) -> tuple[TaskSpec, str]:
        """The checked task and a thread id no thread has yet; refused before any write."""
        spec = task_of(task) if isinstance(task, str) else TaskSpec.model_validate(task)
        thread = new_thread_id() if thread_id is None else check_thread_id(thread_id)
        if self.reader.exists(thread):
            raise ThreadExists(
                f"thread {thread!r} already exists; choose another id, or inspect it with "
                f"`handoff status {thread}`"
            )
        self.admit(spec)
        return spec, thread

    def admit(self, task: TaskSpec) -> None:
        """``graphs.admission.admit`` over this wiring's nodes, with this run context."""
        admit(task, (spec for spec, _ in self.opened.wiring), self.opened.context)

    def resume(
        self,
        thread_id: str,
        decision: Any | None,
        on_progress: ProgressCallback | None,
        stream_mode: Modes | None = None,
        breakpoints: Breakpoints = ((), ()),
    ) -> Streamed:
        """LangGraph would start an unknown thread anew and replay a finished one: refused.

        Streams and returns as :meth:`run` does, stopping at ``breakpoints`` as it does.
        """
        self.refuse_if_held(thread_id, "nothing was resumed")
        self.check_breakpoints(breakpoints)
        if not self.reader.exists(thread_id):
            raise ThreadNotFound(
                f"no thread {thread_id!r} in {self.opened.where()}; nothing to resume "
                "(start one with `handoff run`)"
            )
        snapshot = self.opened.graph.get_state(thread_config(thread_id))
        self.opened.check_graph(thread_id, snapshot.metadata)
        outcome = read(snapshot.values, "outcome", RunOutcome, node="workflow")
        if not snapshot.next and outcome is not None:
            raise ThreadFinished(
                f"thread {thread_id!r} is complete ({outcome.state.value}, result "
                f"{outcome.result_status}); nothing to resume",
                outcome,
            )
        request = request_of(snapshot)
        expired = request is not None and has_expired(request, self.opened.context.clock())
        if request is not None and decision is None and not expired:
            raise DecisionRequired(
                f"thread {thread_id!r} is waiting for a human decision on "
                f"{request.interrupt_id!r}: {request.question} "
                f"(allowed: {', '.join(request.allowed_actions)}); "
                f"see `handoff status {thread_id}`",
                request,
            )
        if request is None and decision is not None:
            log = read(snapshot.values, "decisions", DecisionLog, node="workflow")
            last = log.last() if log is not None else None
            stands = f" (its last decision, {last.summary()}, stands)" if last else ""
            due = f"; its next step is {', '.join(snapshot.next)}" if snapshot.next else ""
            raise NotWaiting(
                f"thread {thread_id!r} is not waiting for a decision{stands}{due}: the decision "
                f"was not used; `handoff resume {thread_id}` without one continues it"
            )
        payload: Any = None
        context = self.opened.context
        if request is not None:  # checked here, once: the pause takes it as admitted
            answer = self.expired_default(request) if expired else None
            checked = answer or check_decision(request, decision, self.opened.pauses)
            payload = Command(resume=checked.model_dump(mode="json"))
            context = replace(context, admitted=request)
        self.opened.ledger.abandon_running(thread_id, ABANDONED)
        outcome = yield from self.drive(
            payload,
            thread_id,
            on_progress,
            context,
            breakpoints=breakpoints,
            stream_mode=stream_mode,
        )
        if request is None or not expired or decision is None:
            return outcome
        raise RequestExpired(
            f"request {request.interrupt_id!r} of thread {thread_id!r} expired at "
            f"{request.expires_at:%Y-%m-%d %H:%M:%S} UTC and can no longer be answered: its "
            f"default, {checked.action}, was recorded by {checked.decided_by!r} instead "
            f"(the thread is now {outcome.state.value}); the decision was not used",
            outcome,
        )

    def expired_default(self, request: HumanRequest) -> HumanDecision:
        """The decision an expired request is answered with: its pause's default.

        The default is recorded even when a person's decision is what found the request
        expired: whichever way in touches the thread first answers it, exactly once (the
        caller holds the thread's lock), and the decision is refused after (exit 2).
        """
        return expired_decision(request, pause_of(request, self.opened.pauses))

    def refuse_if_held(self, thread_id: str, consequence: str) -> None:
        """Asked while the thread's lock is held, so the answer holds until the write is done.

        A holder that takes the same lock to claim a thread (the worker fleet's submissions
        do) cannot slip in between. Without a guard every thread is let through.
        """
        if self.guard is not None:
            self.guard.refuse_if_held(self.opened.backend, check_thread_id(thread_id), consequence)

    def drive(
        self,
        payload: Any,
        thread_id: str,
        on_progress: ProgressCallback | None,
        context: RunContext | None = None,
        *,
        breakpoints: Breakpoints = ((), ()),
        stream_mode: Modes | None = None,
    ) -> Streamed:
        """Run the graph to its end or first pause, and return the thread's outcome.

        When the last step wrote one, that is the state's (the channel keeps the last value
        written), so the whole state is not read back; after a pause it is read.
        ``context`` is this workflow's, unless the caller adds to it (a checked decision).
        ``breakpoints`` are the nodes this run stops before and after (LangGraph's static
        ``interrupt_before``/``interrupt_after``): the thread then has them next, waiting for
        no decision, and a resume without one goes on. What LangGraph streams in
        ``stream_mode`` is yielded as its ``graph.stream(stream_mode=...)`` yields it: the
        chunk for one mode, ``(mode, chunk)`` for a list of them.
        """
        before, after = breakpoints
        ended: RunOutcome | None = None
        services = context or self.opened.context
        asked = (
            []
            if stream_mode is None
            else [stream_mode]
            if isinstance(stream_mode, str)
            else list(stream_mode)
        )
        # what nodes stream costs a run a few ms in LangGraph: asked for when heard
        heard: list[StreamMode] = ["updates", "custom"] if on_progress is not None else ["updates"]
        with services.trace.run(thread_id):  # the run's span, when tracing is on
            for update in self.opened.graph.stream(
                payload,
                self.opened.config(thread_id),
                context=services,
                durability="sync",
                interrupt_before=list(before) or None,
                interrupt_after=list(after) or None,
                stream_mode=[*asked, *(mode for mode in heard if mode not in asked)],
            ):
                mode, chunk = cast(tuple[str, Any], update)
                if mode in asked:
                    yield chunk if isinstance(stream_mode, str) else update
                if mode == "custom":  # what a node sent with LangGraph's get_stream_writer()
                    if on_progress is not None:
                        on_progress(CUSTOM_EVENT, {"event": chunk})
                    continue
                if mode != "updates":
                    continue
                for node, values in chunk.items():
                    if node == "__metadata__":  # LangGraph's note on a resumed step's writes
                        continue
                    written = values if isinstance(values, dict) else {}
                    if node == "__interrupt__":
                        ended = None
                        written = {} if values else {BREAKPOINT: True}  # no interrupt() asked
                    elif "outcome" in written:
                        ended = read(written, "outcome", RunOutcome, node="workflow")
                    if on_progress is not None:
                        on_progress(node, written)
        return ended or self.reader.outcome(thread_id)

    def cancel(self, thread_id: str, reason: str, decided_by: str) -> RunOutcome:
        """Recorded as if a node that only ends the run had concluded (``ending_node``)."""
        if not reason.strip():
            raise InvalidDecision("reason is required to cancel a thread: say why")
        self.refuse_if_held(thread_id, "nothing was cancelled")
        if not self.reader.exists(thread_id):
            raise ThreadNotFound(
                f"no thread {thread_id!r} in {self.opened.where()}; nothing to cancel"
            )
        graph, config = self.opened.graph, self.opened.config(thread_id)
        snapshot = graph.get_state(config)
        self.opened.check_graph(thread_id, snapshot.metadata)
        values = snapshot.values
        ended = read(values, "outcome", RunOutcome, node="workflow")
        if ended is not None and not snapshot.next:
            raise ThreadFinished(
                f"thread {thread_id!r} already ended ({ended.state.value}, result "
                f"{ended.result_status}); nothing to cancel",
                ended,
            )
        task = read(values, "task", TaskSpec, node="workflow")
        draft = read(values, "draft", DraftArticle, node="workflow")
        outcome = RunOutcome(
            thread_id=thread_id,
            task_id=task.task_id if task else "unknown",
            state=TaskState.CANCELED,
            result_status="failed",
            errors=[
                ErrorDetail(
                    code=ErrorCode.HUMAN_ABORTED,
                    detail=f"cancelled by {decided_by}: {reason}"[:2000],
                )
            ],
            draft=draft.body if draft else None,
            review_rounds=draft.revision if draft else 0,
            reason=f"cancelled by {decided_by}: {reason}"[:2000],
        )
        graph.update_state(config, {"outcome": outcome}, as_node=ending_node(self.opened.wiring))
        record_event(
            self.opened.ledger,
            thread_id,
            task_version=task.task_version if task else 1,
            label=f"cancel by {decided_by}",
            detail=reason,
            clock=self.opened.context.clock,
        )
        return outcome


def drained(streamed: Generator[Any, None, Returned]) -> Returned:
    """Run a stream to its end, dropping what it yields: what it returns."""
    while True:
        try:
            next(streamed)
        except StopIteration as done:
            return cast(Returned, done.value)


def ending_node(wiring: Wiring) -> str:
    """The first node whose route goes nowhere but the end, to record a cancel as.

    The outcome is written as that node's update, so its route, asked next, ends the thread.
    A terminal node's route may go on (finalize's goes to the export, or to a node a project
    adds after publishing): recorded as one, a cancelled thread would be left a node to run.
    """
    for spec, route in routed(wiring):
        if set(targets(route)) == {END}:
            return spec.name
    raise WiringError("no node of the wiring routes only to the end: a cancel has none to end as")


def task_of(objective: str, **fields: Any) -> TaskSpec:
    """A TaskSpec for an objective, with a fresh task id unless one is given."""
    fields.setdefault("task_id", f"task-{uuid.uuid4().hex[:12]}")
    return TaskSpec.model_validate({"objective": objective, **fields})
