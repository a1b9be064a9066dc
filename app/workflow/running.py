"""Moving a thread: run a new one, resume it (with a decision), cancel it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from langgraph.types import Command

from app.errors import (
    DecisionRequired,
    InvalidDecision,
    NotWaiting,
    ThreadExists,
    ThreadFinished,
    ThreadNotFound,
)
from app.workflow.access import one_writer, storage
from app.workflow.decisions import check_decision
from app.workflow.ids import check_thread_id, new_thread_id
from app.workflow.reading import ThreadReading
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
from graphs.attempt_log import record_event
from graphs.boundary import read

ProgressCallback = Callable[[str, dict[str, Any]], None]


class Running(ThreadReading):
    """Starting, continuing and ending threads."""

    @storage
    @one_writer
    def run(
        self,
        task: TaskSpec | str,
        thread_id: str | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> RunOutcome:
        """Start a new thread for ``task`` and run it to its end (or first pause)."""
        if thread_id is not None:  # always, inside the lock: a new id has been chosen
            self.refuse_if_held(thread_id, "nothing was run")
        spec, thread = self.new_thread(task, thread_id)
        return self._drive({"task": spec}, thread, on_progress) or self.outcome(thread)

    def new_thread(self, task: TaskSpec | str, thread_id: str | None) -> tuple[TaskSpec, str]:
        """The checked task and a thread id no thread has yet; refused before any write."""
        spec = self.task(task) if isinstance(task, str) else TaskSpec.model_validate(task)
        thread = new_thread_id() if thread_id is None else check_thread_id(thread_id)
        if self._exists(thread):
            raise ThreadExists(
                f"thread {thread!r} already exists; choose another id, or inspect it with "
                f"`handoff status {thread}`"
            )
        self.admit(spec)
        return spec, thread

    def admit(self, task: TaskSpec) -> None:
        """Refuse, before the thread has anything saved, a task its first steps would refuse.

        ``graphs.admission.admit`` over this wiring's nodes: ``run`` fails with the error a
        node would raise (SourceRefused for a corpus the rules refuse) and leaves no thread.
        """
        admit(task, (spec for spec, _ in self.wiring), self.context)

    @storage
    @one_writer
    def resume(
        self,
        thread_id: str,
        decision: Any | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> RunOutcome:
        """Continue a thread that was interrupted, crashed or is waiting for a decision.

        LangGraph would silently start a new run for an unknown thread and replay the old
        result for a finished one; both are refused here, as is a thread waiting for a human
        when no decision is given.
        """
        self.refuse_if_held(thread_id, "nothing was resumed")
        if not self._exists(thread_id):
            raise ThreadNotFound(
                f"no thread {thread_id!r} in {self._where()}; nothing to resume "
                "(start one with `handoff run`)"
            )
        snapshot = self.graph.get_state(self.config(thread_id))
        outcome = read(snapshot.values, "outcome", RunOutcome, node="workflow")
        if not snapshot.next and outcome is not None:
            raise ThreadFinished(
                f"thread {thread_id!r} is complete ({outcome.state.value}, result "
                f"{outcome.result_status}); nothing to resume",
                outcome,
            )
        request = self._request(snapshot)
        if request is not None and decision is None:
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
        context = self.context
        if request is not None:  # checked here, once: the pause takes it as admitted
            checked = self.check_decision(request, decision)
            payload = Command(resume=checked.model_dump(mode="json"))
            context = replace(context, admitted=request)
        self.ledger.abandon_running(
            thread_id, "attempt did not finish: its process ended before recording a result"
        )
        return self._drive(payload, thread_id, on_progress, context) or self.outcome(thread_id)

    @storage
    def refuse_if_held(self, thread_id: str, consequence: str = "nothing was changed") -> None:
        """Raise if this Workflow's guard says another way in holds the thread.

        ``run``, ``resume`` and ``cancel`` call this while they hold the thread's lock, so
        the answer holds until they are done (a holder that takes the same lock to claim a
        thread, as the worker fleet's submissions do, cannot slip in between). A Workflow
        given no guard lets every thread through.
        """
        if self.guard is not None:
            self.guard.refuse_if_held(self.backend, check_thread_id(thread_id), consequence)

    def check_decision(self, request: HumanRequest, decision: Any) -> HumanDecision:
        """Validate a decision against the open request and its pause (``check_decision``)."""
        return check_decision(request, decision, self.pauses)

    def _drive(
        self,
        payload: Any,
        thread_id: str,
        on_progress: ProgressCallback | None,
        context: RunContext | None = None,
    ) -> RunOutcome | None:
        """Run the graph to its end or first pause; the outcome if its last step wrote one.

        That outcome is the state's (the channel keeps the last value written), so the
        caller need not read the whole state back; after a pause it reads the state.
        ``context`` is this workflow's, unless the caller adds to it (a checked decision).
        """
        ended: RunOutcome | None = None
        for update in self.graph.stream(
            payload,
            self.config(thread_id),
            context=context or self.context,
            durability="sync",
            stream_mode="updates",
        ):
            for node, values in update.items():
                if node == "__metadata__":  # LangGraph's note on a resumed step's saved writes
                    continue
                written = values if isinstance(values, dict) else {}
                if node == "__interrupt__":
                    ended = None
                elif "outcome" in written:
                    ended = read(written, "outcome", RunOutcome, node="workflow")
                if on_progress is not None:
                    on_progress(node, written)
        return ended

    @storage
    @one_writer
    def cancel(self, thread_id: str, reason: str, *, decided_by: str = "human") -> RunOutcome:
        """End a thread deliberately: waiting, stuck after an error, or refused inputs.

        The thread records a CANCELED outcome as if its last node had concluded, so it can
        no longer be resumed, its pending request (if any) is withdrawn, and every reader
        (status, the served graph) sees why it ended. Nothing it stored is removed.
        """
        if not reason.strip():
            raise InvalidDecision("reason is required to cancel a thread: say why")
        self.refuse_if_held(thread_id, "nothing was cancelled")
        if not self._exists(thread_id):
            raise ThreadNotFound(f"no thread {thread_id!r} in {self._where()}; nothing to cancel")
        snapshot = self.graph.get_state(self.config(thread_id))
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
        # as if a terminal node recorded it: their routers end a run that has an outcome
        terminal = next(spec.name for spec, _ in self.wiring if spec.terminal)
        self.graph.update_state(self.config(thread_id), {"outcome": outcome}, as_node=terminal)
        record_event(
            self.ledger,
            thread_id,
            task_version=task.task_version if task else 1,
            label=f"cancel by {decided_by}",
            detail=reason,
            clock=self.context.clock,
        )
        return outcome
