"""Reading a thread: where it stands, its state, its audit, the thread list."""

from __future__ import annotations

from typing import Any

from langgraph.constants import START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from app.errors import (
    StorageDamaged,
    ThreadNotFound,
)
from app.storage.postgres import describe_url
from app.storage.thread_reads import GlanceSaver
from app.workflow.access import storage
from app.workflow.base import OpenWorkflow
from app.workflow.ids import check_thread_id
from app.workflow.status import ThreadStatus, ThreadSummary
from contracts import (
    DraftArticle,
    FreshnessReport,
    HumanRequest,
    NodeRun,
    ReviewResult,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs import build_graph, workflow_channels
from graphs.boundary import read, validate_channel

GLANCED_CHANNELS: tuple[str, ...] = ("task", "outcome", "draft", "review", "freshness")
"""The channels ``status`` and ``threads`` print from; every other state channel (the
research bundle, the handoff envelope: both grow with the corpus) is left undecoded."""


class ThreadReading(OpenWorkflow):
    """What a thread holds, read from its checkpoints and its audit."""

    @staticmethod
    def _request(snapshot: Any) -> HumanRequest | None:
        for pending in snapshot.interrupts:
            return HumanRequest.model_validate(pending.value)
        return None

    @storage
    def pending(self, thread_id: str) -> HumanRequest | None:
        """The open human request of a thread, or None if it is not waiting.

        One read of the latest checkpoint's small channels: the interrupts are as in the
        full state (see :meth:`status`).
        """
        return self._request(self._glanced(thread_id))

    @storage
    def threads_has(self, thread_id: str) -> bool:
        """Whether the checkpoint store has a thread with this id."""
        return self._exists(check_thread_id(thread_id))

    def started_task(self, thread_id: str) -> TaskSpec | None:
        """The task the thread was started with, or None where no thread exists.

        A run killed after its input was saved but before its first step was has no
        ``task`` in state yet: the task is still the pending input of that checkpoint.
        """
        saved = self.saver.get_tuple(self.config(check_thread_id(thread_id)))
        if saved is None:
            return None
        channels = saved.checkpoint["channel_values"]
        pending = channels.get(START)
        task = channels.get("task") or (pending.get("task") if isinstance(pending, dict) else None)
        if task is None:
            raise StorageDamaged(
                f"thread {thread_id!r} has a checkpoint without its task: neither in state "
                "nor as the run's pending input"
            )
        return TaskSpec.model_validate(task)

    def _exists(self, thread_id: str) -> bool:
        return self.saver.get_tuple(self.config(thread_id)) is not None

    def _values(self, thread_id: str) -> dict[str, Any]:
        snapshot = self.graph.get_state(self.config(thread_id))
        if not snapshot.values and not snapshot.next and snapshot.created_at is None:
            raise ThreadNotFound(
                f"no thread {thread_id!r} in {self._where()}; list threads with `handoff threads`"
            )
        return dict(snapshot.values)

    def _where(self) -> str:
        return describe_url(self.settings.resolved_database_url())

    def _glancer(self) -> tuple[GlanceSaver, CompiledStateGraph[Any, Any, Any, Any]]:
        """The reader of small channels, and the graph compiled with it (made once)."""
        if self._glance is None:
            skipped = set(workflow_channels(self.wiring)) - set(GLANCED_CHANNELS)
            reader = GlanceSaver(self.saver, skipped)
            self._glance = reader, build_graph(wiring=self.wiring).compile(checkpointer=reader)
        return self._glance

    def _glanced(self, thread_id: str) -> StateSnapshot:
        """The latest state with only GLANCED_CHANNELS decoded.

        ``next`` and the interrupts are as in the full state (see ``app.storage.thread_reads``).
        """
        snapshot = self._glancer()[1].get_state(self.config(check_thread_id(thread_id)))
        if not snapshot.values and not snapshot.next and snapshot.created_at is None:
            raise ThreadNotFound(
                f"no thread {thread_id!r} in {self._where()}; list threads with `handoff threads`"
            )
        return snapshot

    def _fact_count(self, snapshot: StateSnapshot) -> int | None:
        """Facts in the snapshot's research bundle, counted without decoding the bundle."""
        return self._glancer()[0].count_items(snapshot.config, "research", "facts")

    def _outcome_of(
        self, thread_id: str, snapshot: StateSnapshot, facts: int | None = None
    ) -> RunOutcome:
        """The outcome ``snapshot`` reports; ``facts`` is its fact count if already read."""
        values = snapshot.values
        ended = read(values, "outcome", RunOutcome, node="workflow")
        request = self._request(snapshot)
        if ended is not None and request is not None:  # after its end, e.g. confirm an export
            update = {"state": TaskState.INPUT_REQUIRED, "result_status": None}
            return ended.model_copy(
                update={**update, "human_request": request, "reason": request.question}
            )
        if ended is not None and snapshot.next:  # recorded, but a step is still due
            update = {"state": TaskState.WORKING, "result_status": None}
            reason = f"next step: {', '.join(snapshot.next)}"
            return ended.model_copy(update={**update, "reason": reason})
        if ended is not None:
            return ended
        task = read(values, "task", TaskSpec, node="workflow")
        if request is not None:
            if facts is None:
                facts = self._fact_count(snapshot)
            return RunOutcome(
                thread_id=thread_id,
                task_id=task.task_id if task else "unknown",
                state=TaskState.INPUT_REQUIRED,
                human_request=request,
                fact_count=facts or 0,
                reason=request.question,
            )
        return RunOutcome(
            thread_id=thread_id,
            task_id=task.task_id if task else "unknown",
            state=TaskState.WORKING,
            reason=f"next step: {', '.join(snapshot.next) or 'none'}",
        )

    @storage
    def outcome(self, thread_id: str) -> RunOutcome:
        """The thread's recorded outcome; a thread that has not ended reports WORKING.

        Read from the small channels alone (see :meth:`status`).
        """
        return self._outcome_of(thread_id, self._glanced(thread_id))

    @storage
    def status(self, thread_id: str) -> ThreadStatus:
        """Current step, next nodes and outcome of a thread.

        Only what it reports is read: the small channels of the latest checkpoint, once
        (its ``current`` outcome comes from the same read), a count of checkpoints and of
        facts. The research bundle and the handoff envelope, which grow with the corpus, are
        never decoded, so a thread of a 10,000-file corpus answers as fast as any
        (``bench/p7_big_corpus.py``); no earlier checkpoint is read, so a thread of 200
        checkpoints answers as fast as one of 3 (``bench/p4_resume_cost.py``).
        """
        snapshot = self._glanced(thread_id)
        values = snapshot.values
        draft = read(values, "draft", DraftArticle, node="workflow")
        review = read(values, "review", ReviewResult, node="workflow")
        task = read(values, "task", TaskSpec, node="workflow")
        step = (snapshot.metadata or {}).get("step")
        facts = self._fact_count(snapshot)
        return ThreadStatus(
            thread_id=thread_id,
            next_nodes=tuple(snapshot.next),
            outcome=read(values, "outcome", RunOutcome, node="workflow"),
            checkpoints=self.checkpoint_count(thread_id),
            step=step if isinstance(step, int) else None,
            draft_revision=draft.revision if draft else None,
            verdict=review.verdict if review else None,
            fact_count=facts,
            current=self._outcome_of(thread_id, snapshot, facts),
            freshness=read(values, "freshness", FreshnessReport, node="workflow"),
            updated_at=snapshot.created_at,
            task_version=task.task_version if task else None,
        )

    @storage
    def summary(self, thread_id: str) -> ThreadSummary:
        """What the thread list shows of a thread: one read of the latest small channels."""
        snapshot = self._glanced(thread_id)
        step = (snapshot.metadata or {}).get("step")
        return ThreadSummary(
            thread_id=thread_id,
            outcome=self._outcome_of(thread_id, snapshot),
            step=step if isinstance(step, int) else None,
            next_nodes=tuple(snapshot.next),
            updated_at=snapshot.created_at,
        )

    @storage
    def checkpoint_count(self, thread_id: str) -> int:
        """How many checkpoints the thread has (every namespace), counted, not decoded."""
        return self._glancer()[0].checkpoint_count(thread_id)

    @storage
    def history(self, thread_id: str) -> list[NodeRun]:
        """The audit log: one NodeRun per node attempt, oldest first."""
        self._values(thread_id)
        return self.context.ledger.runs(thread_id)

    @storage
    def state(self, thread_id: str) -> dict[str, Any]:
        """The thread's latest state values (contracts, validated)."""
        values = self._values(thread_id)
        channels = workflow_channels(self.wiring)
        return {
            channel: validate_channel("workflow", channel, value, channels)
            for channel, value in values.items()
        }

    @storage
    def threads(self) -> list[str]:
        """Every thread id in the checkpoint store, sorted (no checkpoint is decoded)."""
        return self._glancer()[0].thread_ids()
