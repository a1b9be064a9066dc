"""Reading a thread: where it stands, its state, its audit, the thread list."""

from __future__ import annotations

from typing import Any

from langgraph.constants import START
from langgraph.types import StateSnapshot

from app.errors import (
    StorageDamaged,
    ThreadNotFound,
)
from app.workflow.ids import check_thread_id
from app.workflow.opened import Opened, graph_of, thread_config
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
from graphs import workflow_channels
from graphs.boundary import read, validate_channel
from graphs.human import request_in


def request_of(snapshot: StateSnapshot) -> HumanRequest | None:
    """The open human request a snapshot is paused on, or None."""
    for pending in snapshot.interrupts:
        return request_in(pending.value)
    return None


class ThreadReader:
    """What a thread holds, read from its checkpoints and its audit; nothing is written."""

    def __init__(self, opened: Opened) -> None:
        self.opened = opened

    def pending(self, thread_id: str) -> HumanRequest | None:
        """One read of the latest checkpoint's small channels (see :meth:`status`)."""
        return request_of(self.glanced(thread_id))

    def exists(self, thread_id: str) -> bool:
        """Whether the checkpointer has a checkpoint of the thread (none is decoded)."""
        return self.opened.saver.get_tuple(thread_config(thread_id)) is not None

    def started_task(self, thread_id: str) -> TaskSpec | None:
        """The task the thread was started with, or None where no thread exists.

        A run killed after its input was saved but before its first step was has no
        ``task`` in state yet: the task is still the pending input of that checkpoint.
        """
        saved = self.opened.saver.get_tuple(thread_config(check_thread_id(thread_id)))
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

    def snapshot(self, thread_id: str) -> StateSnapshot:
        """The thread's latest full state, or ThreadNotFound."""
        return self._found(thread_id, self.opened.graph.get_state(thread_config(thread_id)))

    def values(self, thread_id: str) -> dict[str, Any]:
        """The thread's latest state values as saved (see :meth:`state` for them checked)."""
        return dict(self.snapshot(thread_id).values)

    def glanced(self, thread_id: str) -> StateSnapshot:
        """The latest state with only GLANCED_CHANNELS decoded.

        ``next`` and the interrupts are as in the full state (see ``app.storage.thread_reads``).
        """
        config = thread_config(check_thread_id(thread_id))
        return self._found(thread_id, self.opened.glance[1].get_state(config))

    def _found(self, thread_id: str, snapshot: StateSnapshot) -> StateSnapshot:
        if not snapshot.values and not snapshot.next and snapshot.created_at is None:
            raise ThreadNotFound(
                f"no thread {thread_id!r} in {self.opened.where()}; "
                "list threads with `handoff threads`"
            )
        self.opened.check_graph(thread_id, snapshot.metadata)
        return snapshot

    def graph_of(self, thread_id: str) -> str | None:
        """The id of the graph that made the thread (its latest checkpoint's), None if none."""
        saved = self.opened.saver.get_tuple(thread_config(check_thread_id(thread_id)))
        return None if saved is None else graph_of(saved.metadata)

    def _fact_count(self, snapshot: StateSnapshot) -> int | None:
        """Facts in the snapshot's research bundle, counted without decoding the bundle."""
        return self.opened.glance[0].count_items(snapshot.config, "research", "facts")

    def outcome_of(
        self, thread_id: str, snapshot: StateSnapshot, facts: int | None = None
    ) -> RunOutcome:
        """The outcome ``snapshot`` reports; ``facts`` is its fact count if already read."""
        values = snapshot.values
        ended = read(values, "outcome", RunOutcome, node="workflow")
        request = request_of(snapshot)
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

    def outcome(self, thread_id: str) -> RunOutcome:
        """Read from the small channels alone (see :meth:`status`)."""
        return self.outcome_of(thread_id, self.glanced(thread_id))

    def status(self, thread_id: str) -> ThreadStatus:
        """Only what it reports is read: the small channels of the latest checkpoint, once.

        Its ``current`` outcome comes from the same read; checkpoints and facts are counted.
        The research bundle and the handoff envelope, which grow with the corpus, are
        never decoded, so a thread of a 10,000-file corpus answers as fast as any
        (``bench/p7_big_corpus.py``); no earlier checkpoint is read, so a thread of 200
        checkpoints answers as fast as one of 3 (``bench/p4_resume_cost.py``).
        """
        snapshot = self.glanced(thread_id)
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
            current=self.outcome_of(thread_id, snapshot, facts),
            freshness=read(values, "freshness", FreshnessReport, node="workflow"),
            updated_at=snapshot.created_at,
            task_version=task.task_version if task else None,
        )

    def summary(self, thread_id: str) -> ThreadSummary:
        """One read of the latest small channels."""
        snapshot = self.glanced(thread_id)
        step = (snapshot.metadata or {}).get("step")
        return ThreadSummary(
            thread_id=thread_id,
            outcome=self.outcome_of(thread_id, snapshot),
            step=step if isinstance(step, int) else None,
            next_nodes=tuple(snapshot.next),
            updated_at=snapshot.created_at,
        )

    def checkpoint_count(self, thread_id: str) -> int:
        """Counted, not decoded."""
        return self.opened.glance[0].checkpoint_count(thread_id)

    def history(self, thread_id: str) -> list[NodeRun]:
        """The audit log of a thread that exists."""
        self.snapshot(thread_id)
        return self.opened.context.ledger.runs(thread_id)

    def state(self, thread_id: str) -> dict[str, Any]:
        """Each saved channel validated against its contract."""
        values = self.values(thread_id)
        channels = workflow_channels(self.opened.wiring)
        return {
            channel: validate_channel("workflow", channel, value, channels)
            for channel, value in values.items()
        }

    def threads(self) -> list[str]:
        """No checkpoint is decoded."""
        return self.opened.glance[0].thread_ids()

    def graph_threads(self) -> list[str]:
        """The threads this graph made: another graph's are that graph's to sweep or prune."""
        return [t for t in self.threads() if self.graph_of(t) in (None, self.opened.graph_id)]
