"""The Python API: open a Workflow, run tasks on threads, inspect what happened."""

from __future__ import annotations

import functools
import hashlib
import inspect
import re
import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.constants import START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot
from pydantic import BaseModel, ValidationError

from app.corpus.citations import (
    SOURCE_ID,
    SourceEntry,
    find_source,
    list_sources,
    marked_source,
    snapshot_ref,
)
from app.errors import (
    DatabaseUnavailable,
    DecisionRequired,
    InvalidDecision,
    InvalidEdit,
    InvalidThreadId,
    NotWaiting,
    QueueUnavailable,
    StorageDamaged,
    ThreadExists,
    ThreadFinished,
    ThreadNotFound,
    UnknownArtifactName,
)
from app.fleet import (
    Fleet,
    JobState,
    QueuedDecision,
    queue_decision,
    queue_run,
    queued_refusal,
    running_job_of,
    unfinished_job,
)
from app.services import build_context
from app.settings import Settings
from app.storage.backends import Backend, open_backend, storage_errors
from app.storage.ledger import RunLedgerBackend
from app.storage.postgres import describe_url, is_outage, is_postgres_url
from app.storage.thread_reads import GlanceSaver
from contracts import (
    ArtifactRef,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    FreshnessReport,
    HumanDecision,
    HumanRequest,
    NodeRun,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs import WIRING, RunContext, Wiring, build_graph, workflow_channels
from graphs.boundary import describe_validation_error, read, validate_channel
from graphs.human import as_decision, decision_schema
from graphs.pauses import Pause
from graphs.wiring import pauses_of

ArtifactName = Literal["article", "draft", "notes", "research", "review"]
ARTIFACT_NAMES: tuple[str, ...] = ("article", "draft", "notes", "research", "review")
EDITABLE_ARTIFACTS: tuple[str, ...] = ("draft",)
GLANCED_CHANNELS: tuple[str, ...] = ("task", "outcome", "draft", "review", "freshness")
"""The channels ``status`` and ``threads`` print from; every other state channel (the
research bundle, the handoff envelope: both grow with the corpus) is left undecoded."""
_THREAD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
ProgressCallback = Callable[[str, dict[str, Any]], None]
_Method = TypeVar("_Method", bound=Callable[..., Any])


def check_thread_id(thread_id: str) -> str:
    """Thread ids become part of artifact ids, so they are kept to a safe alphabet."""
    if not _THREAD_ID.match(thread_id):
        raise InvalidThreadId(
            f"invalid thread id {thread_id!r}: use 1-64 letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return thread_id


def new_thread_id() -> str:
    """A fresh, collision-resistant thread id."""
    return f"t-{uuid.uuid4().hex[:16]}"


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


@dataclass(frozen=True)
class ThreadSummary:
    """One row of the thread list: what ``handoff threads`` prints of a thread."""

    thread_id: str
    outcome: RunOutcome
    step: int | None
    next_nodes: tuple[str, ...]
    updated_at: str | None
    """When its latest checkpoint was written (ISO 8601, UTC)."""


def _one_writer(method: _Method) -> _Method:
    """Run a method that writes a thread while this process holds the thread's lock.

    Everything the method checks (does the thread exist, has it finished, is it waiting)
    is read inside the lock, so of two processes racing on one thread exactly one proceeds
    and the other gets ThreadBusy having changed nothing. A lost database connection ends
    the call with DatabaseUnavailable. ``thread_id=None`` (a new thread) is named first.
    """
    signature = inspect.signature(method)

    @functools.wraps(method)
    def locked(self: Workflow, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        thread_id = bound.arguments.get("thread_id")
        if thread_id is None:
            thread_id = bound.arguments["thread_id"] = new_thread_id()
        with self.backend.writing(check_thread_id(thread_id)):
            return method(*bound.args, **bound.kwargs)

    return cast(_Method, locked)


def _storage(method: _Method) -> _Method:
    """Report a damaged database or a full disk as the project's error, naming the file.

    Every public method that reads or writes storage is wrapped; nested calls pass the
    translated error through unchanged.
    """

    @functools.wraps(method)
    def guarded(self: Workflow, *args: Any, **kwargs: Any) -> Any:
        with storage_errors(self.settings):
            return method(self, *args, **kwargs)

    return cast(_Method, guarded)


class Workflow:
    """The workflow with its checkpointer and services; use as a context manager.

    ``Workflow(settings)`` reads locations from settings; ``database_url`` and
    ``artifact_dir`` override them for one instance (tests, scripts). ``wiring`` is the
    graph's nodes and routers (``graphs.WIRING``, or an extended copy). ``read_only``
    opens the storage for inspection only (status, history, artifacts, threads): nothing
    is set up or written, so it works on a full disk; running or editing needs a
    Workflow that is not read-only.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        database_url: str | None = None,
        artifact_dir: Path | None = None,
        context: RunContext | None = None,
        wiring: Wiring = WIRING,
        read_only: bool = False,
    ) -> None:
        base = settings or Settings()
        overrides: dict[str, Any] = {}
        if database_url is not None:
            overrides["database_url"] = database_url
        if artifact_dir is not None:
            overrides["artifact_dir"] = artifact_dir
        self.settings = base.with_overrides(**overrides) if overrides else base
        self.wiring = wiring
        self.pauses: dict[str, Pause] = pauses_of(wiring)
        """The wiring's pauses by kind: what a waiting thread's decision is checked against."""
        self.read_only = read_only
        self._context = context
        self._own_context = context is None
        self._stack: ExitStack | None = None
        self._backend: Backend | None = None
        self._saver: BaseCheckpointSaver[str] | None = None
        self._graph: CompiledStateGraph[Any, Any, Any, Any] | None = None
        self._ledger: RunLedgerBackend | None = None
        self._glance: tuple[GlanceSaver, CompiledStateGraph[Any, Any, Any, Any]] | None = None

    def __enter__(self) -> Workflow:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @_storage
    def open(self) -> None:
        """Open the checkpointer and compile the graph with it."""
        if self._stack is not None:
            return
        stack = ExitStack()
        try:
            self._backend = stack.enter_context(
                open_backend(self.settings, read_only=self.read_only)
            )
        except BaseException:
            stack.close()
            raise
        self._saver = self._backend.saver
        self._ledger = self._backend.ledger
        self._stack = stack
        self._graph = build_graph(wiring=self.wiring).compile(checkpointer=self._saver)

    def close(self) -> None:
        """Release the checkpointer's connections."""
        if self._stack is not None:
            self._stack.close()
        self._stack = None
        self._backend = None
        self._saver = None
        self._graph = None
        self._ledger = None
        self._glance = None
        if self._own_context:
            self._context = None  # its store may use the connections just closed

    @property
    def graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The compiled graph (with this workflow's checkpointer)."""
        if self._graph is None:
            self.open()
        assert self._graph is not None
        return self._graph

    @property
    def backend(self) -> Backend:
        """The open storage: saver, audit, artifact store and thread lock."""
        if self._backend is None:
            self.open()
        assert self._backend is not None
        return self._backend

    @property
    def saver(self) -> BaseCheckpointSaver[str]:
        """The open checkpointer."""
        if self._saver is None:
            self.open()
        assert self._saver is not None
        return self._saver

    @property
    def context(self) -> RunContext:
        """The run-scoped services passed to every invoke (and every resume)."""
        if self._context is None:
            self._context = build_context(
                self.settings, self.ledger, store=self.backend.store, wiring=self.wiring
            )
        return self._context

    @property
    def ledger(self) -> RunLedgerBackend:
        """The audit log beside this workflow's checkpoints."""
        if self._ledger is None:
            self.open()
        assert self._ledger is not None
        return self._ledger

    @staticmethod
    def config(thread_id: str) -> RunnableConfig:
        """The LangGraph config addressing one thread."""
        return {"configurable": {"thread_id": thread_id}}

    def task(self, objective: str, **fields: Any) -> TaskSpec:
        """A TaskSpec for an objective, with a fresh task id unless one is given."""
        fields.setdefault("task_id", f"task-{uuid.uuid4().hex[:12]}")
        return TaskSpec.model_validate({"objective": objective, **fields})

    @_storage
    @_one_writer
    def run(
        self,
        task: TaskSpec | str,
        thread_id: str | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> RunOutcome:
        """Start a new thread for ``task`` and run it to its end (or first pause)."""
        if thread_id is not None:  # always, inside the lock: a new id has been chosen
            self.refuse_if_queued(thread_id, "nothing was run")
        spec, thread = self._new_thread(task, thread_id)
        return self._drive({"task": spec}, thread, on_progress) or self.outcome(thread)

    @_storage
    def submit(self, task: TaskSpec | str, thread_id: str | None = None) -> str:
        """Queue a new thread for the worker fleet (PostgreSQL); returns its id.

        The task is checked as ``run`` checks it before anything is queued; a worker starts
        the thread. Submitting an id that exists or has an unfinished job is refused
        (ThreadExists, ThreadQueued), checked again under the thread's locks.
        """
        spec, thread = self._new_thread(task, thread_id)
        queue_run(self, thread, spec)
        return thread

    @_storage
    def submit_decision(self, thread_id: str, decision: Any) -> QueuedDecision:
        """Queue a decision for a waiting thread, checked now against its open request.

        Decisions of one thread are serialized (``app.fleet.queue_decision``): while a
        decision job is unfinished, or once one answered the request, the same decision
        returns that job (``duplicate``) and a different one is refused (DecisionConflict).
        """
        return queue_decision(self, check_thread_id(thread_id), decision)

    @_storage
    def refuse_if_queued(self, thread_id: str, consequence: str = "nothing was changed") -> None:
        """Raise ThreadQueued if the worker fleet has a job of the thread not yet finished.

        Such a job brings the thread as far as it goes; running, resuming or cancelling the
        thread meanwhile would drop it. ``run``, ``resume`` and ``cancel`` call this while
        they hold the thread's lock, which submitting takes too, so the answer holds until
        they are done. A fleet job's own body passes (``app.fleet.running_job_of``).
        """
        pool = self.backend.pool
        if pool is None or running_job_of(check_thread_id(thread_id)):
            return  # no queue on this database, or the queue itself is running the thread
        try:
            with pool.connection() as conn:
                job = unfinished_job(conn, thread_id)
        except Exception as error:
            if not is_outage(error):
                raise
            raise DatabaseUnavailable(
                f"database unavailable at {self._where()} ({type(error).__name__}: "
                f"{' '.join(str(error).split())}); nothing was changed"
            ) from error
        if job is not None:
            raise queued_refusal(thread_id, job, consequence)

    def job(self, thread_id: str) -> JobState | None:
        """The thread's latest worker-fleet job (queued, running, done), or None if none.

        A submitted thread has a job before it has a checkpoint: this is how ``status``
        tells "queued" from "unknown".
        """
        fleet = self._fleet()
        return None if fleet is None else fleet.job_of(check_thread_id(thread_id))

    def queued(self) -> dict[str, JobState]:
        """Threads submitted to the fleet whose job is queued or running, by id."""
        fleet = self._fleet()
        return {} if fleet is None else fleet.unstarted()

    def _fleet(self) -> Fleet | None:
        """The fleet on this database, or None where none can have run (SQLite, no extra)."""
        if not is_postgres_url(self.settings.resolved_database_url()):
            return None
        try:
            return Fleet(self.settings)
        except QueueUnavailable:  # the queue extra is not installed: no job was ever queued
            return None

    def _new_thread(self, task: TaskSpec | str, thread_id: str | None) -> tuple[TaskSpec, str]:
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

        Each node's fingerprint (what it will read outside state, e.g. the corpus) is what
        the graph computes before the node starts, and it raises for input the rules refuse
        (SourceRefused: a corpus path outside the roots, a device, a file over the limit).
        Asking it here makes ``run`` fail with that error and leave no thread behind.
        """
        for spec, _ in self.wiring:
            if spec.fingerprint is not None:
                agent = self.context.agent_for(spec) if spec.agent is not None else None
                spec.fingerprint(agent, task)

    @_storage
    @_one_writer
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
        self.refuse_if_queued(thread_id, "nothing was resumed")
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
            raise NotWaiting(
                f"thread {thread_id!r} is not waiting for a decision; the decision was not used"
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

    def check_decision(self, request: HumanRequest, decision: Any) -> HumanDecision:
        """Validate a decision against the open request and its pause (``check_decision``)."""
        return check_decision(request, decision, self.pauses)

    @staticmethod
    def _request(snapshot: Any) -> HumanRequest | None:
        for pending in snapshot.interrupts:
            return HumanRequest.model_validate(pending.value)
        return None

    @_storage
    def pending(self, thread_id: str) -> HumanRequest | None:
        """The open human request of a thread, or None if it is not waiting.

        One read of the latest checkpoint's small channels: the interrupts are as in the
        full state (see :meth:`status`).
        """
        return self._request(self._glanced(thread_id))

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

    @_storage
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
        if ended is not None:
            return ended
        task = read(values, "task", TaskSpec, node="workflow")
        request = self._request(snapshot)
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

    @_storage
    def outcome(self, thread_id: str) -> RunOutcome:
        """The thread's recorded outcome; a thread that has not ended reports WORKING.

        Read from the small channels alone (see :meth:`status`).
        """
        return self._outcome_of(thread_id, self._glanced(thread_id))

    @_storage
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
        )

    @_storage
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

    @_storage
    def checkpoint_count(self, thread_id: str) -> int:
        """How many checkpoints the thread has (every namespace), counted, not decoded."""
        return self._glancer()[0].checkpoint_count(thread_id)

    @_storage
    def history(self, thread_id: str) -> list[NodeRun]:
        """The audit log: one NodeRun per node attempt, oldest first."""
        self._values(thread_id)
        return self.context.ledger.runs(thread_id)

    @_storage
    def state(self, thread_id: str) -> dict[str, Any]:
        """The thread's latest state values (contracts, validated)."""
        values = self._values(thread_id)
        channels = workflow_channels(self.wiring)
        return {
            channel: validate_channel("workflow", channel, value, channels)
            for channel, value in values.items()
        }

    @_storage
    def artifact_ref(self, thread_id: str, name: str) -> ArtifactRef:
        """The reference the thread holds for a named artifact, or a source's snapshot.

        A source id (``src-N``, see :meth:`sources`) names the snapshot of the bytes
        research read from that source.
        """
        if SOURCE_ID.match(name):
            research = read(self._values(thread_id), "research", ResearchBundle, node="workflow")
            return snapshot_ref(find_source(research, name, thread_id))
        if name not in ARTIFACT_NAMES:
            raise UnknownArtifactName(
                f"unknown artifact {name!r}; expected one of {', '.join(ARTIFACT_NAMES)}, "
                f"or a source id such as src-1 (list them: `handoff sources {thread_id}`)"
            )
        values = self._values(thread_id)
        ref: ArtifactRef | None = None
        if name == "article":
            outcome = read(values, "outcome", RunOutcome, node="workflow")
            ref = outcome.article if outcome else None
        elif name == "draft":
            draft = read(values, "draft", DraftArticle, node="workflow")
            ref = draft.body if draft else None
        elif name in ("notes", "research"):
            bundle = read(values, "research", ResearchBundle, node="workflow")
            ref = bundle.artifact_refs[0] if bundle and bundle.artifact_refs else None
        elif name == "review":
            review = read(values, "review", ReviewResult, node="workflow")
            ref = review.report if review else None
        if ref is None:
            raise UnknownArtifactName(f"thread {thread_id!r} has no {name} artifact yet")
        return ref

    @_storage
    def artifact(self, thread_id: str, name: str) -> bytes:
        """The bytes of a named artifact, verified against the hash the thread recorded."""
        return self.context.store.get(self.artifact_ref(thread_id, name))

    @_storage
    def sources(self, thread_id: str) -> list[SourceEntry]:
        """Each source research read for the thread, with the current draft's claims citing it.

        A cited claim comes with its span and 1-based line range in the source's snapshot,
        which is read (and verified) for that; see ``app.corpus.citations``.
        """
        values = self._values(thread_id)
        return list_sources(
            read(values, "research", ResearchBundle, node="workflow"),
            read(values, "draft", DraftArticle, node="workflow"),
            self.context.store,
        )

    @_storage
    def source_text(self, thread_id: str, source_id: str) -> str:
        """A source's snapshot text, as research read it, with each cited span marked.

        Each span the current draft cites is wrapped as ``⟦claim-1003 …⟧``; the rest is
        the snapshot unchanged (``app.corpus.citations.unmark`` takes the markers out again). A
        snapshot that is not the bytes research read raises IntegrityError.
        """
        values = self._values(thread_id)
        return marked_source(
            read(values, "research", ResearchBundle, node="workflow"),
            read(values, "draft", DraftArticle, node="workflow"),
            source_id,
            self.context.store,
            thread_id,
        )

    @_storage
    @_one_writer
    def put_artifact(
        self, thread_id: str, name: str, content: bytes, *, editor: str = "human"
    ) -> ArtifactRef:
        """Store a person's new revision of a thread's artifact (e.g. an edited draft).

        The thread keeps its pin on the old revision; the next consumer notices the newer
        one and applies the task's ``on_stale`` policy, so the edit is never used silently.
        """
        if name not in EDITABLE_ARTIFACTS:
            raise UnknownArtifactName(
                f"artifact {name!r} cannot be edited; editable: {', '.join(EDITABLE_ARTIFACTS)}"
            )
        current = self.artifact_ref(thread_id, name)
        if current.media_type.startswith("text/"):
            try:
                content.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidEdit(
                    f"the new {name} is not UTF-8 text (byte {error.start} cannot be decoded); "
                    f"nothing was stored and the thread keeps revision {current.revision}"
                ) from None
        ref = self.context.store.put(current.artifact_id, current.kind, content, current.media_type)
        now = self.context.clock()
        task = read(self._values(thread_id), "task", TaskSpec, node="workflow")
        edit = NodeRun(
            task_version=task.task_version if task else 1,
            node_id=f"edit:{name} by {editor}",
            attempt=1,
            status="succeeded",
            input_hash=ref.sha256,
            started_at=now,
            ended_at=now,
            duration_ms=0,
            artifact_ids=[f"{ref.artifact_id}@{ref.revision}"],
        )
        seq = self.ledger.start(thread_id, edit)
        self.ledger.finish(thread_id, seq, edit)
        return ref

    @_storage
    @_one_writer
    def cancel(self, thread_id: str, reason: str, *, decided_by: str = "human") -> RunOutcome:
        """End a thread deliberately: waiting, stuck after an error, or refused inputs.

        The thread records a CANCELED outcome as if its last node had concluded, so it can
        no longer be resumed, its pending request (if any) is withdrawn, and every reader
        (status, the served graph) sees why it ended. Nothing it stored is removed.
        """
        if not reason.strip():
            raise InvalidDecision("reason is required to cancel a thread: say why")
        self.refuse_if_queued(thread_id, "nothing was cancelled")
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
        now = self.context.clock()
        cancel = NodeRun(
            task_version=task.task_version if task else 1,
            node_id=f"cancel by {decided_by}"[:100],
            attempt=1,
            status="succeeded",
            input_hash=hashlib.sha256(reason.encode()).hexdigest(),
            started_at=now,
            ended_at=now,
            duration_ms=0,
        )
        self.ledger.finish(thread_id, self.ledger.start(thread_id, cancel), cancel)
        return outcome

    @_storage
    def threads(self) -> list[str]:
        """Every thread id in the checkpoint store, sorted (no checkpoint is decoded)."""
        return self._glancer()[0].thread_ids()


def pause_of(request: HumanRequest, pauses: Mapping[str, Pause]) -> Pause:
    """The declared pause that made ``request``, or InvalidDecision if ``pauses`` lack it.

    A thread saved by a workflow with a pause this one no longer declares cannot be
    answered here: nothing would know which actions it allows.
    """
    pause = pauses.get(request.request_kind)
    if pause is None:
        declared = ", ".join(sorted(pauses)) or "none"
        raise InvalidDecision(
            f"invalid decision for {request.interrupt_id!r}: request_kind: pause "
            f"{request.request_kind!r} is not declared by this workflow (declared: {declared})"
        )
    return pause


def check_decision(
    request: HumanRequest, decision: Any, pauses: Mapping[str, Pause]
) -> HumanDecision:
    """Validate a decision against the open request and its pause, naming the field.

    ``request`` is the one saved with the pause (what the person was shown), which names
    its thread, so a decision naming another thread, or none, is refused. Which actions
    exist and what each needs is the pause's declaration.
    """
    schema = decision_schema(request, pause_of(request, pauses))
    try:
        return as_decision(schema.model_validate(_plain(decision)))
    except ValidationError as error:
        raise InvalidDecision(
            f"invalid decision for {request.interrupt_id!r}: {describe_validation_error(error)}"
        ) from error


def _plain(decision: Any) -> Any:
    if isinstance(decision, BaseModel):
        return decision.model_dump(mode="json")
    return decision
