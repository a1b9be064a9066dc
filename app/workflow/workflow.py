"""The Python API's one class: every way in (CLI, worker fleet, scripts) drives it.

``Workflow`` owns the open storage (:class:`~app.workflow.opened.Opened`: checkpointer,
compiled graph, run context) and hands each call to one small service: reading a thread
(:class:`~app.workflow.reading.ThreadReader`), its artifacts
(:class:`~app.workflow.artifacts.Artifacts`), moving it
(:class:`~app.workflow.running.Runner`), revising its task
(:class:`~app.workflow.revising.Reviser`), removing ended ones
(:class:`~app.workflow.pruning.Pruner`). What each public method guarantees is said at
its door: ``@storage`` (a storage failure is the project's error, naming the file) and
``@one_writer`` (the call holds the thread's lock, see ``app.workflow.access``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from app.corpus.citations import SourceEntry
from app.durations import parse_duration
from app.errors import DecisionRequired, NotWaiting, ThreadBusy, ThreadFinished
from app.project_graphs import project_graph
from app.services import wiring_for
from app.settings import Settings
from app.storage.backends import Backend
from app.storage.ledger import RunLedgerBackend
from app.workflow.access import one_writer, storage
from app.workflow.artifacts import Artifacts
from app.workflow.decisions import check_decision
from app.workflow.guard import WriteGuard
from app.workflow.ids import check_thread_id
from app.workflow.opened import Graph, Opened, thread_config
from app.workflow.pruning import Pruner, PruneReport
from app.workflow.reading import ThreadReader
from app.workflow.revising import Reviser, check_revision
from app.workflow.running import Modes, ProgressCallback, Runner, Streamed, drained, task_of
from app.workflow.status import ThreadStatus, ThreadSummary
from contracts import (
    ArtifactRef,
    HumanDecision,
    HumanRequest,
    NodeRun,
    RunOutcome,
    TaskRevision,
    TaskSpec,
)
from graphs import RunContext, Wiring
from graphs.human import has_expired


class Workflow:
    """The workflow with its checkpointer and services; use as a context manager.

    ``Workflow(settings)`` reads locations from settings; ``database_url`` and
    ``artifact_dir`` override them for one instance (tests, scripts). ``graph`` is the id
    of the graph it runs, one of langgraph.json's (``app.project_graphs``; the main graph,
    ``handoff``, by default): its threads record it, and a thread another graph made is
    refused (``WrongGraph``, naming both). ``wiring`` is the graph's nodes and routers
    (by default the graph's own, ``graphs.WIRING`` for the main one, or an extended
    copy), with the MCP tools the settings give its nodes (``app.services.wiring_for``).
    ``context`` is a run context to use instead of the one built from settings.
    ``read_only`` opens the storage for inspection only (status, history, artifacts,
    threads): nothing is set up or written, so it works on a full disk; running or
    editing needs a Workflow that is not read-only. ``guard`` is asked before a thread is
    run, resumed or cancelled (``app.workflow.guard``): the worker fleet's
    ``fleet_workflow`` passes the queue's, so a thread with an unfinished job is left to it.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        database_url: str | None = None,
        artifact_dir: Path | None = None,
        context: RunContext | None = None,
        graph: str | None = None,
        wiring: Wiring | None = None,
        read_only: bool = False,
        guard: WriteGuard | None = None,
    ) -> None:
        base = settings or Settings()
        overrides: dict[str, Any] = {}
        if database_url is not None:
            overrides["database_url"] = database_url
        if artifact_dir is not None:
            overrides["artifact_dir"] = artifact_dir
        self.settings = base.with_overrides(**overrides) if overrides else base
        chosen = project_graph(self.settings.graphs_config, graph)
        self.graph_id = chosen.graph_id
        """The id of the graph this Workflow runs (langgraph.json's)."""
        wiring = wiring_for(self.settings, chosen.wiring() if wiring is None else wiring)
        self.opened = Opened(
            self.settings, wiring, context=context, read_only=read_only, graph_id=self.graph_id
        )
        self.wiring = wiring
        self.pauses = self.opened.pauses
        """The wiring's pauses by kind: what a waiting thread's decision is checked against."""
        self.read_only = read_only
        self.guard = guard
        self.reader = ThreadReader(self.opened)
        self.artifacts = Artifacts(self.opened, self.reader)
        self.runner = Runner(self.opened, self.reader, guard)
        self.reviser = Reviser(self.opened, self.reader, self.runner)
        self.pruner = Pruner(self.opened, self.reader, self.runner)

    # -- the open storage ------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> None:
        """Open the checkpointer and compile the graph with it (else done on first use)."""
        self.opened.open()

    def close(self) -> None:
        """Release the checkpointer's connections."""
        self.opened.close()

    @property
    def graph(self) -> Graph:
        """The compiled graph (with this workflow's checkpointer)."""
        return self.opened.graph

    @property
    def backend(self) -> Backend:
        """The open storage: saver, audit, artifact store and thread lock."""
        return self.opened.backend

    @property
    def saver(self) -> BaseCheckpointSaver[str]:
        """The open checkpointer."""
        return self.opened.saver

    @property
    def context(self) -> RunContext:
        """The run-scoped services passed to every invoke (and every resume)."""
        return self.opened.context

    @property
    def ledger(self) -> RunLedgerBackend:
        """The audit log beside this workflow's checkpoints."""
        return self.opened.ledger

    @staticmethod
    def config(thread_id: str) -> RunnableConfig:
        """The LangGraph config addressing one thread."""
        return thread_config(thread_id)

    # -- moving a thread -------------------------------------------------------------------

    def task(self, objective: str, **fields: Any) -> TaskSpec:
        """A TaskSpec for an objective, with a fresh task id unless one is given."""
        return task_of(objective, **fields)

    @storage
    @one_writer
    def run(
        self,
        task: TaskSpec | str,
        thread_id: str | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
    ) -> RunOutcome:
        """Start a new thread for ``task`` and run it to its end (or first pause).

        ``interrupt_before`` and ``interrupt_after`` name nodes this run stops before or
        after, as LangGraph's static breakpoints do: the outcome is then WORKING, its
        reason the next step, and :meth:`resume` with no decision goes on. A name that is
        no node of the graph is refused (``UnknownNode``, listing them) before anything is
        written.
        """
        assert thread_id is not None  # one_writer named the new thread
        breakpoints = (tuple(interrupt_before), tuple(interrupt_after))
        return drained(self.runner.run(task, thread_id, on_progress, breakpoints))

    @storage
    @one_writer
    def stream(
        self,
        task: TaskSpec | str,
        thread_id: str | None = None,
        *,
        stream_mode: Modes = "values",
        on_progress: ProgressCallback | None = None,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
    ) -> Streamed:
        """:meth:`run`, yielding what LangGraph's ``graph.stream`` yields as the run goes.

        ``stream_mode`` is LangGraph's: ``"messages"`` gives each token a node's chat model
        streams as ``(message_chunk, metadata)``, ``"updates"`` each node's writes,
        ``"custom"`` what a node sends with ``get_stream_writer()``; a list gives ``(mode,
        chunk)`` pairs. The run is :meth:`run`'s, with its checks, its lock (held until the
        stream ends or is closed) and its arguments; nothing happens until the first item
        is asked for. What :meth:`run` returns, the generator returns when it ends:
        ``outcome = yield from workflow.stream(...)``, or :meth:`outcome` of the thread
        after a ``for`` loop (pass ``thread_id`` to know it). Leaving the loop early stops
        the run where it is, as a crash would: :meth:`resume` goes on from there.
        """
        assert thread_id is not None  # one_writer named the new thread
        breakpoints = (tuple(interrupt_before), tuple(interrupt_after))
        return (yield from self.runner.run(task, thread_id, on_progress, breakpoints, stream_mode))

    def new_thread(self, task: TaskSpec | str, thread_id: str | None) -> tuple[TaskSpec, str]:
        """The checked task and a thread id no thread has yet; refused before any write."""
        return self.runner.new_thread(task, thread_id)

    def admit(self, task: TaskSpec) -> None:
        """Refuse, before the thread has anything saved, a task its first steps would refuse.

        ``graphs.admission.admit`` over this wiring's nodes: ``run`` fails with the error a
        node would raise (SourceRefused for a corpus the rules refuse) and leaves no thread.
        """
        self.runner.admit(task)

    @storage
    @one_writer
    def resume(
        self,
        thread_id: str,
        decision: Any | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
    ) -> RunOutcome:
        """Continue a thread that was interrupted, crashed or is waiting for a decision.

        LangGraph would silently start a new run for an unknown thread and replay the old
        result for a finished one; both are refused here, as is a thread waiting for a human
        when no decision is given. ``interrupt_before`` and ``interrupt_after`` stop the
        resumed run as they stop :meth:`run`.
        """
        breakpoints = (tuple(interrupt_before), tuple(interrupt_after))
        return drained(
            self.runner.resume(thread_id, decision, on_progress, breakpoints=breakpoints)
        )

    @storage
    @one_writer
    def stream_resume(
        self,
        thread_id: str,
        decision: Any | None = None,
        *,
        stream_mode: Modes = "values",
        on_progress: ProgressCallback | None = None,
        interrupt_before: Sequence[str] = (),
        interrupt_after: Sequence[str] = (),
    ) -> Streamed:
        """:meth:`resume`, yielding what LangGraph streams as :meth:`stream` does."""
        breakpoints = (tuple(interrupt_before), tuple(interrupt_after))
        return (
            yield from self.runner.resume(
                thread_id, decision, on_progress, stream_mode, breakpoints
            )
        )

    @storage
    def refuse_if_held(self, thread_id: str, consequence: str = "nothing was changed") -> None:
        """Raise if this Workflow's guard says another way in holds the thread.

        ``run``, ``resume`` and ``cancel`` call this while they hold the thread's lock, so
        the answer holds until they are done (a holder that takes the same lock to claim a
        thread, as the worker fleet's submissions do, cannot slip in between). A Workflow
        given no guard lets every thread through.
        """
        self.runner.refuse_if_held(thread_id, consequence)

    def check_decision(self, request: HumanRequest, decision: Any) -> HumanDecision:
        """Validate a decision against the open request and its pause (``check_decision``)."""
        return check_decision(request, decision, self.pauses)

    @storage
    @one_writer
    def cancel(self, thread_id: str, reason: str, *, decided_by: str = "human") -> RunOutcome:
        """End a thread deliberately: waiting, stuck after an error, or refused inputs.

        The thread records a CANCELED outcome as if its last node had concluded, so it can
        no longer be resumed, its pending request (if any) is withdrawn, and every reader
        (status, the served graph) sees why it ended. Nothing it stored is removed.
        """
        return self.runner.cancel(thread_id, reason, decided_by)

    @storage
    @one_writer
    def revise(
        self,
        thread_id: str,
        revision: TaskRevision | Mapping[str, Any],
        *,
        on_progress: ProgressCallback | None = None,
    ) -> RunOutcome:
        """Make ``revision`` the thread's next task version and run it to its end or pause.

        It works on a thread that is waiting (its open request is withdrawn), partial,
        failed, completed or was killed mid-run. A published article stays as it was, at
        its revision; the run publishes a new one. Every node whose input hash the change
        left alone reuses its result (``handoff history`` says so, per node). Refused
        before anything is written: an unknown thread, a cancelled one, a revision that
        cannot apply (InvalidRevision, naming the field), a corpus the rules refuse.
        """
        return self.reviser.revise(thread_id, revision, on_progress)

    @staticmethod
    def check_revision(thread_id: str, revision: Any) -> TaskRevision:
        """The revision as its contract, or InvalidRevision naming the field."""
        return check_revision(thread_id, revision)

    @storage
    def prune(
        self,
        older_than: timedelta | str,
        *,
        keep_last: int = 0,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> PruneReport:
        """Remove the threads that ended longer than ``older_than`` ago (``30d``, ``12h``).

        With each goes everything it stored: checkpoints, audit rows, and its artifacts
        with every blob no other thread names. The ``keep_last`` most recently ended
        threads stay however old, as does every thread that has not ended (waiting for a
        person, running, stopped mid-run), one another process holds, and one this
        Workflow's guard holds: open it with ``app.opening.open_workflow`` (the CLI does)
        so that, on PostgreSQL, a thread the worker fleet has a job of stays too.
        Only this graph's threads, ``keep_last`` of them kept: each of the project's graphs
        prunes its own (``app.opening.each_graph``, as the CLI and the fleet do).
        ``dry_run`` reports what would go and changes nothing. ``now`` is when ages are
        measured from (default: the run context's clock). See ``app.workflow.pruning``.
        """
        if isinstance(older_than, str):
            older_than = parse_duration(older_than, "older_than")
        return self.pruner.prune(older_than, keep_last, dry_run, now)

    @storage
    def sweep(self) -> list[tuple[str, RunOutcome]]:
        """Answer every waiting thread whose request expired with its pause's default.

        What a worker does now and then (``handoff sweep`` once), so an expired request
        is answered even when nobody comes back to its thread. Only this graph's threads:
        each of the project's graphs sweeps its own (``app.opening.each_graph``). Each
        thread is resumed as :meth:`resume` with no decision would, under its lock: a
        thread another way in answered or holds meanwhile is left to it, since that way in
        records the default itself. Returns the threads answered here, with how each went on.
        """
        now = self.context.clock()
        swept: list[tuple[str, RunOutcome]] = []
        for thread_id in self.reader.graph_threads():
            request = self.pending(thread_id)
            if request is None or not has_expired(request, now):
                continue
            try:
                swept.append((thread_id, self.resume(thread_id)))
            except (ThreadBusy, ThreadFinished, NotWaiting, DecisionRequired):
                continue  # answered, or held, by another way in: its default is that one's
        return swept

    # -- reading a thread ------------------------------------------------------------------

    @storage
    def pending(self, thread_id: str) -> HumanRequest | None:
        """The open human request of a thread, or None if it is not waiting.

        One read of the latest checkpoint's small channels: the interrupts are as in the
        full state (see :meth:`status`).
        """
        return self.reader.pending(thread_id)

    @storage
    def graph_of(self, thread_id: str) -> str | None:
        """The id of the graph that made the thread, or None where no thread exists.

        Any graph's thread is answered, whichever graph this Workflow runs.
        """
        return self.reader.graph_of(thread_id)

    @storage
    def threads_has(self, thread_id: str) -> bool:
        """Whether the checkpoint store has a thread with this id."""
        return self.reader.exists(check_thread_id(thread_id))

    def started_task(self, thread_id: str) -> TaskSpec | None:
        """The task the thread was started with, or None where no thread exists."""
        return self.reader.started_task(thread_id)

    @storage
    def outcome(self, thread_id: str) -> RunOutcome:
        """The thread's recorded outcome; a thread that has not ended reports WORKING.

        Read from the small channels alone (see :meth:`status`).
        """
        return self.reader.outcome(thread_id)

    @storage
    def status(self, thread_id: str) -> ThreadStatus:
        """Current step, next nodes and outcome of a thread, read as cheaply as it can be.

        See :meth:`~app.workflow.reading.ThreadReader.status`: what grows with the corpus
        or the thread's length is never decoded.
        """
        return self.reader.status(thread_id)

    @storage
    def summary(self, thread_id: str) -> ThreadSummary:
        """What the thread list shows of a thread: one read of the latest small channels."""
        return self.reader.summary(thread_id)

    @storage
    def checkpoint_count(self, thread_id: str) -> int:
        """How many checkpoints the thread has (every namespace), counted, not decoded."""
        return self.reader.checkpoint_count(thread_id)

    @storage
    def history(self, thread_id: str) -> list[NodeRun]:
        """The audit log: one NodeRun per node attempt, oldest first."""
        return self.reader.history(thread_id)

    @storage
    def state(self, thread_id: str) -> dict[str, Any]:
        """The thread's latest state values (contracts, validated)."""
        return self.reader.state(thread_id)

    @storage
    def threads(self) -> list[str]:
        """Every thread id in the checkpoint store, sorted (no checkpoint is decoded)."""
        return self.reader.threads()

    # -- a thread's artifacts --------------------------------------------------------------

    @storage
    def artifact_ref(self, thread_id: str, name: str) -> ArtifactRef:
        """The reference the thread holds for a named artifact, or a source's snapshot.

        A source id (``src-N``, see :meth:`sources`) names the snapshot of the bytes
        research read from that source. Only the thread's own artifact is answered (see
        ``app.workflow.artifacts.owned``): whoever reads or edits it by this thread's name
        gets this thread's.
        """
        return self.artifacts.artifact_ref(thread_id, name)

    @storage
    def artifact(self, thread_id: str, name: str) -> bytes:
        """The bytes of a named artifact, verified against the hash the thread recorded."""
        return self.artifacts.artifact(thread_id, name)

    @storage
    def sources(self, thread_id: str) -> list[SourceEntry]:
        """Each source research read for the thread, with the current draft's claims citing it.

        A cited claim comes with its span and 1-based line range in the source's snapshot,
        which is read (and verified) for that; see ``app.corpus.citations``. Every source
        must be the thread's own snapshot, or none is listed.
        """
        return self.artifacts.sources(thread_id)

    @storage
    def source_text(self, thread_id: str, source_id: str) -> str:
        """A source's snapshot text, as research read it, with each cited span marked.

        Each span the current draft cites is wrapped as ``⟦claim-1003 …⟧``; the rest is
        the snapshot unchanged (``app.corpus.citations.unmark`` takes the markers out again). A
        snapshot that is not the bytes research read, or not the thread's own, raises
        IntegrityError.
        """
        return self.artifacts.source_text(thread_id, source_id)

    @storage
    @one_writer
    def put_artifact(
        self, thread_id: str, name: str, content: bytes, *, editor: str = "human"
    ) -> ArtifactRef:
        """Store a person's new revision of a thread's artifact (e.g. an edited draft).

        The thread keeps its pin on the old revision; the next consumer notices the newer
        one and applies the task's ``on_stale`` policy, so the edit is never used silently.
        An edited markdown draft is stored made safe to show, as every writer's draft is
        (``app.text.publishable``): the Reviewer then reviews, and finalize publishes,
        exactly the bytes stored here.
        """
        return self.artifacts.put_artifact(thread_id, name, content, editor)
