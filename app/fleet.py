"""The worker fleet: Procrastinate jobs on the project's PostgreSQL run and resume threads.

Why Procrastinate: it needs nothing beyond the PostgreSQL a scale-out deployment already
has, and its job model maps onto the thread model directly. Every job of a thread carries
the thread id as its ``lock``, so the queue itself hands a thread to one worker at a time
and in order (a decision queued behind a run waits for it); the run job carries it as its
``queueing_lock`` too, so submitting one thread twice is refused. The per-thread lock of
``app.locks`` still guards every write, so a worker, ``handoff resume`` and the dev server
never write one thread at once.

A job is a step towards a thread's end, not a unit of work to redo: its body is "bring
this thread as far as it goes", so a job retried after its worker died resumes from the
thread's last checkpoint, and the node runner's reuse of recorded results keeps finished
nodes from running twice. A thread that pauses for a person ends its job; the decision is a
job of its own, so no worker is held while a person thinks.

Procrastinate is imported here only: the single-machine default needs no queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.backends.postgres import unavailable
from app.errors import (
    DatabaseUnavailable,
    DecisionRequired,
    NotWaiting,
    QueueUnavailable,
    ThreadBusy,
    ThreadExists,
    ThreadFinished,
)
from app.postgres import application_name, connect, is_outage, is_postgres_url, schema_lock
from app.settings import Settings
from contracts import DecisionLog, HumanDecision, RunOutcome, TaskSpec
from graphs.errors import HandoffError

if TYPE_CHECKING:
    import procrastinate

    from app.workflow import Workflow

__all__ = [
    "DECIDE",
    "QUEUE",
    "RUN",
    "Fleet",
    "JobState",
    "decide_thread",
    "run_thread",
]

QUEUE = "handoff"
RUN = "handoff.run_thread"
DECIDE = "handoff.decide"
RETRIED = (ThreadBusy, DatabaseUnavailable)
"""Errors a job is retried on: the thread is briefly held elsewhere, or the database is away."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobState:
    """A thread's most recent job, as the queue sees it."""

    thread_id: str
    job_id: int
    task: str
    status: str  # todo | doing | succeeded | failed | cancelled | aborted
    attempts: int
    worker_id: int | None

    @property
    def label(self) -> str:
        """Queued or running while the queue holds it; otherwise what became of it."""
        return {"todo": "queued", "doing": "running"}.get(self.status, self.status)


class _Workflows:
    """One open Workflow per worker thread, kept for the worker's life.

    Opening a Workflow (connection pool, tables checked, graph compiled) costs about as much
    as running a short thread, so a job reuses its thread's; the pool replaces connections
    a server restart killed. ``close_all`` runs when the worker stops.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._opened: list[Workflow] = []
        self._lock = threading.Lock()

    def current(self) -> Workflow:
        """The calling thread's open Workflow, opened on first use."""
        from app.workflow import Workflow

        workflow: Workflow | None = getattr(self._local, "workflow", None)
        if workflow is None:
            workflow = Workflow(Settings())
            workflow.open()
            self._local.workflow = workflow
            with self._lock:
                self._opened.append(workflow)
        return workflow

    def close_all(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for workflow in opened:
            workflow.close()


WORKFLOWS = _Workflows()


def _as_far_as_it_goes(step: Callable[[Workflow], RunOutcome]) -> str:
    """Run a job's step; a pause for a person or a thread already ended also end the job."""
    try:
        return step(WORKFLOWS.current()).state.value
    except DecisionRequired:
        return "waiting"
    except ThreadFinished as finished:
        return finished.outcome.state.value


def run_thread(thread_id: str, task: dict[str, Any]) -> str:
    """Job body: start the thread, or continue it from its last checkpoint (a retried job)."""

    def step(workflow: Workflow) -> RunOutcome:
        if workflow.threads_has(thread_id):
            return workflow.resume(thread_id)
        return workflow.run(TaskSpec.model_validate(task), thread_id)

    return _as_far_as_it_goes(step)


def decide_thread(thread_id: str, decision: dict[str, Any]) -> str:
    """Job body: apply a queued decision, or, if a killed attempt already did, continue."""
    asked = decision["interrupt_id"]

    def step(workflow: Workflow) -> RunOutcome:
        request = workflow.pending(thread_id)
        if request is not None and request.interrupt_id == asked:
            return workflow.resume(thread_id, decision)
        if asked in recorded_decisions(workflow.state(thread_id)):
            return workflow.resume(thread_id)  # an earlier attempt recorded it, then died
        raise NotWaiting(
            f"decision for {asked!r} not used: thread {thread_id!r} no longer waits "
            "on that request (another decision answered it)"
        )

    return _as_far_as_it_goes(step)


def recorded_decisions(values: dict[str, Any]) -> set[str]:
    """The interrupt ids a thread's decision log has answered."""
    log = values.get("decisions")
    if log is None:
        return set()
    return {entry.interrupt_id for entry in DecisionLog.model_validate(log).decisions}


class Fleet:
    """The Procrastinate app on the settings' database: submit jobs, run a worker, look up."""

    def __init__(self, settings: Settings) -> None:
        url = settings.resolved_database_url()
        if not is_postgres_url(url):
            raise QueueUnavailable(
                "the worker fleet runs on PostgreSQL: set HANDOFF_DATABASE_URL=postgresql://… "
                "(the embedded SQLite default runs threads with `handoff run` instead)"
            )
        try:
            import procrastinate
        except ImportError as error:
            raise QueueUnavailable(
                "the worker fleet needs the queue extra: pip install -e '.[queue]'"
            ) from error
        self.settings = settings
        self.url = url
        self._open = False
        retry = procrastinate.RetryStrategy(
            max_attempts=settings.worker_max_attempts,
            wait=1,
            exponential_wait=2,
            retry_exceptions=set(RETRIED),
        )
        self.app: procrastinate.App = procrastinate.App(
            connector=procrastinate.PsycopgConnector(
                conninfo=url,
                min_size=1,
                max_size=4,
                timeout=settings.database_timeout,
                kwargs={
                    "application_name": application_name(),
                    "connect_timeout": max(2, round(settings.database_timeout)),
                },
            )
        )
        self.app.task(name=RUN, queue=QUEUE, retry=retry, pass_context=False)(run_thread)
        self.app.task(name=DECIDE, queue=QUEUE, retry=retry, pass_context=False)(decide_thread)

    @contextlib.contextmanager
    def _reachable(self) -> Iterator[None]:
        """Report a server that cannot be reached as DatabaseUnavailable (exit code 9)."""
        try:
            yield
        except HandoffError:
            raise
        except Exception as error:
            if not is_outage(error):
                raise
            raise unavailable(self.url, error) from error

    # -- schema ----------------------------------------------------------------------------

    def ensure_schema(self) -> bool:
        """Create Procrastinate's tables in the database's schema once; True if it did."""
        from procrastinate.schema import SchemaManager

        with (
            self._reachable(),
            connect(self.url, self.settings.database_timeout) as conn,
            schema_lock(conn),
        ):
            row = conn.execute("SELECT to_regclass('procrastinate_jobs') AS found").fetchone()
            if row and row["found"]:
                return False
            conn.execute(SchemaManager.get_schema(), prepare=False)  # many statements
            return True

    # -- submitting ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _opened(self) -> Iterator[procrastinate.App]:
        """The app with its connection pool open; nested uses share the outermost one."""
        if self._open:
            yield self.app
            return
        self.ensure_schema()
        with self._reachable(), self.app.open() as app:
            self._open = True
            try:
                yield app
            finally:
                self._open = False

    def submit_run(self, thread_id: str, task: TaskSpec) -> int:
        """Queue a new thread's run; refused if the thread is already queued."""
        [job] = self.submit_runs([(thread_id, task)])
        return job

    def submit_runs(self, runs: list[tuple[str, TaskSpec]]) -> list[int]:
        """Queue many threads' runs on one connection (batches); stops at one already queued."""
        with self._opened():
            return [
                self._defer(
                    RUN,
                    thread_id,
                    ThreadExists(
                        f"thread {thread_id!r} is already queued; see `handoff status {thread_id}`"
                    ),
                    task=task.model_dump(mode="json"),
                )
                for thread_id, task in runs
            ]

    def submit_decision(self, thread_id: str, decision: HumanDecision) -> int:
        """Queue a decision already checked against the thread's open request."""
        refusal = (
            f"thread {thread_id!r} already has a queued job; nothing was queued "
            f"(see `handoff status {thread_id}`)"
        )
        return self._defer(
            DECIDE, thread_id, NotWaiting(refusal), decision=decision.model_dump(mode="json")
        )

    def _defer(self, name: str, thread_id: str, refusal: Exception, **kwargs: Any) -> int:
        """One job for the thread, locked to it; ``refusal`` if one is queued already."""
        from procrastinate.exceptions import AlreadyEnqueued

        with self._opened() as app:
            try:
                return app.configure_task(
                    name, lock=thread_id, queueing_lock=thread_id, queue=QUEUE
                ).defer(thread_id=thread_id, **kwargs)
            except AlreadyEnqueued as error:
                raise refusal from error

    # -- looking up ------------------------------------------------------------------------

    _JOB_COLUMNS = "lock, id, task_name, status::text AS status, attempts, worker_id"

    def _jobs(self, where: str, params: tuple[Any, ...]) -> list[JobState]:
        """Jobs of the queue matching ``where``, latest per thread first; [] if no queue yet."""
        with self._reachable(), connect(self.url, self.settings.database_timeout) as conn:
            row = conn.execute("SELECT to_regclass('procrastinate_jobs') AS found").fetchone()
            if not row or not row["found"]:
                return []
            rows = conn.execute(
                f"SELECT DISTINCT ON (lock) {self._JOB_COLUMNS} FROM procrastinate_jobs "
                f"WHERE queue_name = %s AND {where} ORDER BY lock, id DESC",
                (QUEUE, *params),
            ).fetchall()
        return [
            JobState(r["lock"], r["id"], r["task_name"], r["status"], r["attempts"], r["worker_id"])
            for r in rows
        ]

    def job_of(self, thread_id: str) -> JobState | None:
        """The thread's latest job, or None if it never had one (or the queue is not set up)."""
        found = self._jobs("lock = %s", (thread_id,))
        return found[0] if found else None

    def unstarted(self) -> dict[str, JobState]:
        """Threads whose latest job is queued or running, by id.

        A submitted thread has a job before a worker saves its first step.
        """
        return {
            job.thread_id: job
            for job in self._jobs("true", ())
            if job.label in ("queued", "running")
        }

    # -- working ---------------------------------------------------------------------------

    def work(self, concurrency: int, *, burst: bool = False) -> None:
        """Run jobs until stopped (SIGINT/SIGTERM finish the jobs in hand first).

        ``burst`` stops once no job is left instead of waiting for more (batch runs, CI).
        A database that cannot be reached is reported as the project's error, password
        masked, as every other command reports it.
        """
        with self._reachable():
            self.ensure_schema()
            asyncio.run(self._work(concurrency, burst))

    async def _work(self, concurrency: int, burst: bool) -> None:
        heartbeat = self.settings.worker_heartbeat_seconds
        async with self.app.open_async():
            recovery = asyncio.create_task(self._recover_stalled(heartbeat))
            try:
                await self.app.run_worker_async(
                    queues=[QUEUE],
                    concurrency=concurrency,
                    update_heartbeat_interval=heartbeat,
                    stalled_worker_timeout=3 * heartbeat,
                    install_signal_handlers=True,
                    wait=not burst,
                )
            finally:
                recovery.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await recovery
                WORKFLOWS.close_all()

    async def _recover_stalled(self, heartbeat: float) -> None:
        """Put back in the queue the jobs of workers that stopped sending heartbeats.

        A worker killed mid-job leaves its job ``doing``; once its heartbeat is three
        intervals old, any live worker re-queues the job, and the thread resumes from its
        last checkpoint on whichever worker takes it.
        """
        manager = self.app.job_manager
        while True:
            await asyncio.sleep(heartbeat)
            stalled = await manager.get_stalled_jobs(
                queue=QUEUE, seconds_since_heartbeat=3 * heartbeat
            )
            for job in stalled:
                log.warning("re-queueing job %s of thread %s: its worker stopped", job.id, job.lock)
                await manager.retry_job(job)
