"""The worker fleet: Procrastinate jobs on the project's PostgreSQL run and resume threads.

Why Procrastinate: it needs nothing beyond the PostgreSQL a scale-out deployment already
has, and its job model maps onto the thread model directly. Every job of a thread carries
the thread id as its ``lock``, so the queue itself hands a thread to one worker at a time
and in order (a decision queued behind a run waits for it).

The queue is one of the ways into a thread, so it is guarded like the others:

* A thread with an unfinished job (queued, or running on a worker) is not run, resumed,
  cancelled or submitted again by anyone else: ``ThreadQueued`` (exit code 7) names the
  job. The Workflow checks this while it holds the thread's lock, and submitting takes the
  same lock, so a check and the write it guards cannot be split by a submission.
* Submissions of one thread are serialized by a second advisory lock (the thread's *queue
  lock*, waited for, held for milliseconds): of two racing decisions the second sees the
  first's job. A different decision for a request already answered by a job is refused
  (``DecisionConflict``, exit 2, naming that job); the same decision again is not queued
  twice (the first job is returned).
* The per-thread lock of ``app.storage.locks`` still guards every write, so a worker, ``handoff
  resume`` and the dev server never write one thread at once.

A job is a step towards a thread's end, not a unit of work to redo: its body is "bring
this thread as far as it goes", so a job retried after its worker died resumes from the
thread's last checkpoint, and the node runner's reuse of recorded results keeps finished
nodes from running twice. A thread that pauses for a person ends its job; the decision is a
job of its own, so no worker is held while a person thinks.

A worker outlives a database outage (``OutageWatch``): every query of its queue waits for
a lost database with backoff, logging one line, and exits with code 9 only when told to
stop meanwhile or after ``HANDOFF_WORKER_OUTAGE_SECONDS``.

Procrastinate is imported here only: the single-machine default needs no queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.errors import (
    DatabaseUnavailable,
    DecisionConflict,
    DecisionRequired,
    NotWaiting,
    QueueUnavailable,
    ThreadBusy,
    ThreadExists,
    ThreadFinished,
    ThreadQueued,
)
from app.settings import Settings
from app.storage.backends.postgres import unavailable
from app.storage.postgres import (
    advisory_key,
    application_name,
    connect,
    current_schema,
    describe_url,
    is_outage,
    is_postgres_url,
    redact,
    schema_lock,
)
from contracts import DecisionLog, HumanDecision, RunOutcome, TaskSpec
from graphs.errors import HandoffError

if TYPE_CHECKING:
    import procrastinate

    from app.storage.postgres import PgConnection
    from app.workflow import Workflow

__all__ = [
    "DECIDE",
    "QUEUE",
    "RUN",
    "Fleet",
    "JobState",
    "OutageWatch",
    "QueuedDecision",
    "configure_worker_logging",
    "decide_thread",
    "lost",
    "queue_decision",
    "queue_run",
    "queued_refusal",
    "run_thread",
    "running_job_of",
    "unfinished_job",
]

QUEUE = "handoff"
RUN = "handoff.run_thread"
DECIDE = "handoff.decide"
RETRIED = (ThreadBusy, DatabaseUnavailable)
"""Errors a job is retried on: the thread is briefly held elsewhere, or the database is away."""
BACKOFF_FIRST = 0.25
BACKOFF_MAX = 5.0
"""Seconds between a waiting worker's attempts to reach a lost database: doubling, capped."""
QUEUE_LOCK_POLL = 0.02

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class JobState:
    """A thread's job, as the queue sees it."""

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

    @property
    def unfinished(self) -> bool:
        """Whether the queue still holds it: queued, or taken by a worker."""
        return self.status in ("todo", "doing")

    def describe(self) -> str:
        """``decide job 12 (running)``: how a message names the job."""
        kind = self.task.removeprefix("handoff.").removesuffix("_thread")
        return f"{kind} job {self.job_id} ({self.label})"


# -- the job a worker thread is running --------------------------------------------------

_RUNNING: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "handoff_fleet_job_thread", default=None
)


def running_job_of(thread_id: str) -> bool:
    """Whether the caller is the body of a fleet job of ``thread_id``.

    Such a caller is the queue's own way in: its job is the unfinished one the guard
    looks for, and the queue already runs a thread's jobs one at a time, in order.
    """
    return _RUNNING.get() == thread_id


@contextlib.contextmanager
def _in_job_of(thread_id: str) -> Iterator[None]:
    token = _RUNNING.set(thread_id)
    try:
        yield
    finally:
        _RUNNING.reset(token)


# -- reading the queue on a connection ---------------------------------------------------

_JOB_COLUMNS = "lock, id, task_name, status::text AS status, attempts, worker_id"


def _queue_exists(conn: PgConnection) -> bool:
    row = conn.execute("SELECT to_regclass('procrastinate_jobs') AS found").fetchone()
    return bool(row and row["found"])


def _job(row: Mapping[str, Any]) -> JobState:
    return JobState(
        row["lock"], row["id"], row["task_name"], row["status"], row["attempts"], row["worker_id"]
    )


def _unfinished_jobs(conn: PgConnection, thread_ids: list[str]) -> dict[str, JobState]:
    """The oldest queued or running job of each of ``thread_ids`` that has one."""
    if not _queue_exists(conn):
        return {}
    rows = conn.execute(
        f"SELECT DISTINCT ON (lock) {_JOB_COLUMNS} FROM procrastinate_jobs "
        "WHERE queue_name = %s AND lock = ANY(%s) AND status IN ('todo', 'doing') "
        "ORDER BY lock, id",
        (QUEUE, thread_ids),
    ).fetchall()
    return {row["lock"]: _job(row) for row in rows}


def unfinished_job(conn: PgConnection, thread_id: str) -> JobState | None:
    """The thread's queued or running job, if it has one (None where no queue exists)."""
    return _unfinished_jobs(conn, [thread_id]).get(thread_id)


def _decision_jobs(conn: PgConnection, thread_id: str) -> list[tuple[JobState, dict[str, Any]]]:
    """The thread's decision jobs that were not given up on, newest first, with their decision."""
    if not _queue_exists(conn):
        return []
    rows = conn.execute(
        f"SELECT {_JOB_COLUMNS}, args -> 'decision' AS decision FROM procrastinate_jobs "
        "WHERE queue_name = %s AND lock = %s AND task_name = %s "
        "AND status IN ('todo', 'doing', 'succeeded') ORDER BY id DESC",
        (QUEUE, thread_id, DECIDE),
    ).fetchall()
    return [(_job(row), dict(row["decision"])) for row in rows]


def queued_refusal(thread_id: str, job: JobState, consequence: str) -> ThreadQueued:
    """The error for a thread the fleet holds: names the job, says what was not done."""
    return ThreadQueued(
        f"thread {thread_id!r} is queued for the worker fleet: its {job.describe()} has not "
        f"finished; {consequence}. Wait for it (see `handoff status {thread_id}`)",
        job_id=job.job_id,
        task=job.task,
    )


# -- job bodies --------------------------------------------------------------------------


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


def _as_far_as_it_goes(thread_id: str, step: Callable[[Workflow], RunOutcome]) -> str:
    """Run a job's step; a pause for a person or a thread already ended also end the job."""
    with _in_job_of(thread_id):
        try:
            return step(WORKFLOWS.current()).state.value
        except DecisionRequired:
            return "waiting"
        except ThreadFinished as finished:
            return finished.outcome.state.value


def run_thread(thread_id: str, task: dict[str, Any]) -> str:
    """Job body: start the thread, or continue it from its last checkpoint (a retried job).

    A thread that exists must be this job's own (an earlier attempt started it, perhaps
    killed before its first step was saved): one started with another task would otherwise
    be resumed and this task silently dropped.
    """
    spec = TaskSpec.model_validate(task)

    def step(workflow: Workflow) -> RunOutcome:
        started = workflow.started_task(thread_id)
        if started is None:
            return workflow.run(spec, thread_id)
        if started.task_id != spec.task_id:
            raise ThreadExists(
                f"thread {thread_id!r} was started outside this job, with another task; "
                f"the queued task {spec.task_id!r} was not run"
            )
        return workflow.resume(thread_id)

    return _as_far_as_it_goes(thread_id, step)


def decide_thread(thread_id: str, decision: dict[str, Any]) -> str:
    """Job body: apply a queued decision, or, if a killed attempt already did, continue."""
    asked = decision["interrupt_id"]

    def step(workflow: Workflow) -> RunOutcome:
        request = workflow.pending(thread_id)
        if request is not None and request.interrupt_id == asked:
            return workflow.resume(thread_id, decision)
        recorded = recorded_decisions(workflow.state(thread_id)).get(asked)
        if recorded is not None and _recorded_as(recorded, decision):
            return workflow.resume(thread_id)  # an earlier attempt recorded it, then died
        raise NotWaiting(
            f"decision for {asked!r} not used: thread {thread_id!r} no longer waits "
            "on that request (another decision answered it)"
        )

    return _as_far_as_it_goes(thread_id, step)


def recorded_decisions(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The decisions a thread's log has recorded, by the interrupt id each answered."""
    log = values.get("decisions")
    if log is None:
        return {}
    return {
        entry.interrupt_id: entry.model_dump(mode="json")
        for entry in DecisionLog.model_validate(log).decisions
    }


def _recorded_as(recorded: Mapping[str, Any], decision: Mapping[str, Any]) -> bool:
    """Whether the log's entry is this decision (and not another one for the same request)."""
    fields = ("action", "reason", "decided_by", "answers", "constraints")
    return all(recorded.get(name) == decision.get(name) for name in fields)


# -- queueing from a Workflow ------------------------------------------------------------


@dataclass(frozen=True)
class QueuedDecision:
    """A decision the queue holds: the one just queued, or the same one queued before."""

    decision: HumanDecision
    job_id: int
    duplicate: bool
    """True when an identical decision was queued (or applied) already: nothing was added."""


def queue_run(workflow: Workflow, thread_id: str, task: TaskSpec) -> int:
    """Queue a new thread's run: refused if the thread exists or has an unfinished job.

    Checked under the thread's queue lock (other submissions wait) and its thread lock
    (no run or resume is writing it), so no one can create or queue the thread between
    the check and the job.
    """
    fleet = Fleet(workflow.settings)
    with fleet.queue_locks([thread_id]) as conn:
        job = unfinished_job(conn, thread_id)
        if job is not None:
            raise queued_refusal(thread_id, job, "nothing was queued")
        with workflow.backend.writing(thread_id):
            if workflow.threads_has(thread_id):
                raise ThreadExists(
                    f"thread {thread_id!r} already exists; nothing was queued (choose another "
                    f"id, or inspect it with `handoff status {thread_id}`)"
                )
            return fleet.defer(RUN, thread_id, task=task.model_dump(mode="json"))


def queue_decision(workflow: Workflow, thread_id: str, decision: Any) -> QueuedDecision:
    """Queue a decision for a waiting thread, serialized with every other submission.

    Under the thread's queue lock: a run job not yet finished refuses it (ThreadQueued); a
    decision job not yet finished, or one that already answered the request this decision
    names, makes it a duplicate (the same decision: nothing queued, that job returned) or
    a conflict (DecisionConflict naming that job). Otherwise, holding the thread lock, the
    decision is checked against the request the thread waits on and queued.
    """
    fleet = Fleet(workflow.settings)
    with fleet.queue_locks([thread_id]) as conn:
        job = unfinished_job(conn, thread_id)
        if job is not None and job.task != DECIDE:
            raise queued_refusal(thread_id, job, "no decision was queued")
        if job is not None:
            theirs = next(d for j, d in _decision_jobs(conn, thread_id) if j.job_id == job.job_id)
            return _duplicate_or_conflict(thread_id, decision, job, theirs)
        with workflow.backend.writing(thread_id):
            request = workflow.pending(thread_id)
            named = _interrupt_of(decision)
            if request is None or (named is not None and named != request.interrupt_id):
                answered = [
                    (earlier, theirs)
                    for earlier, theirs in _decision_jobs(conn, thread_id)
                    if named is None or named == theirs["interrupt_id"]
                ]
                if answered and decision is not None:
                    return _duplicate_or_conflict(thread_id, decision, *answered[0])
                if request is None:
                    last = f" (its last decision: {answered[0][0].describe()})" if answered else ""
                    raise NotWaiting(
                        f"thread {thread_id!r} is not waiting for a decision{last}; nothing "
                        f"was queued (see `handoff status {thread_id}`)"
                    )
            checked = workflow.check_decision(request, decision)
            job_id = fleet.defer(DECIDE, thread_id, decision=checked.model_dump(mode="json"))
            return QueuedDecision(checked, job_id, duplicate=False)


def _plain(decision: Any) -> Any:
    return decision.model_dump(mode="json") if isinstance(decision, BaseModel) else decision


def _interrupt_of(decision: Any) -> str | None:
    plain = _plain(decision)
    named = plain.get("interrupt_id") if isinstance(plain, Mapping) else None
    return named if isinstance(named, str) else None


def _duplicate_or_conflict(
    thread_id: str, decision: Any, job: JobState, theirs: dict[str, Any]
) -> QueuedDecision:
    """The earlier job if ``decision`` is the one it carries; DecisionConflict otherwise."""
    queued = HumanDecision.model_validate(theirs)
    plain = _plain(decision)
    mine: HumanDecision | None = None
    if isinstance(plain, Mapping):
        with contextlib.suppress(ValidationError):  # not even a decision: not the same one
            mine = HumanDecision.model_validate({**plain, "interrupt_id": queued.interrupt_id})
    named = _interrupt_of(decision)
    same = (
        mine is not None
        and (named is None or named == queued.interrupt_id)
        and mine.model_dump(exclude={"interrupt_id"}) == queued.model_dump(exclude={"interrupt_id"})
    )
    if same:
        return QueuedDecision(queued, job.job_id, duplicate=True)
    action = plain.get("action") if isinstance(plain, Mapping) else None
    raise DecisionConflict(
        f"thread {thread_id!r}: request {queued.interrupt_id!r} is already answered by "
        f"{queued.action} ({job.describe()}); this {action or 'decision'} was not queued "
        f"(see `handoff status {thread_id}`)",
        job_id=job.job_id,
    )


# -- outages -----------------------------------------------------------------------------


def lost(error: BaseException | None) -> bool:
    """Whether ``error``, or an error it was raised from, means the database was lost.

    Procrastinate wraps psycopg's errors (``ConnectorException from OperationalError``),
    so the chain of causes is followed; the project's DatabaseUnavailable counts too.
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, DatabaseUnavailable) or is_outage(error):
            return True
        seen.add(id(error))
        error = error.__cause__
    return False


def _reason(error: BaseException, url: str) -> str:
    """The innermost cause of ``error`` on one line, password masked."""
    root = error
    while root.__cause__ is not None:
        root = root.__cause__
    text = redact(" ".join(str(root).split()), url)
    return f"{type(root).__name__}: {text}" if text else type(root).__name__


class WaitEnded(DatabaseUnavailable):
    """A worker stopped waiting for its lost database: told to stop, or past the limit.

    Raised by every query that was waiting; the worker ends with it (exit code 9), and the
    copies Procrastinate logs from its side tasks are left out (the last line says it).
    """


class OutageWatch:
    """A worker's view of its database: reachable, or lost since a moment (reported once).

    Every query of the worker's queue goes through :meth:`patiently`: a lost connection
    is a wait, not an error. The first failure of an outage logs one line; the query is
    retried with backoff (0.25 s, doubling up to 5 s) until it succeeds, the worker is
    told to stop, or ``limit`` seconds have passed since the outage began; then it raises
    DatabaseUnavailable, which ends the worker with exit code 9.
    """

    def __init__(self, url: str, limit: float) -> None:
        self.url = url
        self.limit = limit
        self.since: float | None = None
        self.recovered_at = -math.inf
        self.outages = 0
        self._stopping: asyncio.Event | None = None

    @property
    def stopping(self) -> asyncio.Event:
        """Set when the worker is told to stop: a waiting query gives up at once."""
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    def settled(self, grace: float) -> bool:
        """No outage now, and the last one ended at least ``grace`` seconds ago."""
        return self.since is None and time.monotonic() - self.recovered_at >= grace

    async def patiently(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """``call()``'s result, waiting out a lost database between attempts."""
        delay = BACKOFF_FIRST
        while True:
            try:
                result = await call()
            except Exception as error:
                if not lost(error):
                    raise
                await self.wait(error, delay)
                delay = min(2 * delay, BACKOFF_MAX)
                continue
            if self.since is not None:
                self.since, self.recovered_at = None, time.monotonic()
            return result

    async def wait(self, error: BaseException, delay: float) -> None:
        """Sleep ``delay`` before the next attempt; raise if stopping or past the limit."""
        now = time.monotonic()
        where = describe_url(self.url)
        reason = _reason(error, self.url)
        if self.since is None:
            self.since = now
            self.outages += 1
            log.warning(
                "database unavailable at %s (%s); waiting for it, retrying with backoff for "
                "up to %gs (HANDOFF_WORKER_OUTAGE_SECONDS); jobs cut short are retried once "
                "it is back",
                where,
                reason,
                self.limit,
            )
        if self.stopping.is_set():
            raise WaitEnded(
                f"database unavailable at {where} ({reason}); the worker was told to stop "
                "while waiting for it"
            ) from error
        waited = now - self.since
        if waited >= self.limit:
            raise WaitEnded(
                f"database unavailable at {where} for {waited:.0f}s ({reason}); the worker "
                f"stopped waiting after HANDOFF_WORKER_OUTAGE_SECONDS={self.limit:g}"
            ) from error
        with contextlib.suppress(TimeoutError):  # the usual end of the sleep
            await asyncio.wait_for(self.stopping.wait(), min(delay, self.limit - waited))


@dataclass
class _Watching:
    """The OutageWatch of the worker running on a connector; None outside a worker."""

    watch: OutageWatch | None = None


@functools.cache
def _patient_connector_class() -> type[procrastinate.PsycopgConnector]:
    """Procrastinate's psycopg connector whose queries wait out an outage in a worker.

    Built on first use so that importing this module never imports Procrastinate. The
    watch is set only while a worker runs: submitting from a command fails at once.
    """
    import procrastinate

    class PatientConnector(procrastinate.PsycopgConnector):
        def __init__(self, *, watching: _Watching, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.watching = watching

        async def _patiently(self, call: Callable[[], Awaitable[_T]]) -> _T:
            watch = self.watching.watch
            return await (call() if watch is None else watch.patiently(call))

        async def execute_query_async(self, query: Any, **arguments: Any) -> None:
            base = super().execute_query_async
            await self._patiently(lambda: base(query, **arguments))

        async def execute_query_one_async(self, query: Any, **arguments: Any) -> dict[str, Any]:
            base = super().execute_query_one_async
            return await self._patiently(lambda: base(query, **arguments))

        async def execute_query_all_async(
            self, query: Any, **arguments: Any
        ) -> list[dict[str, Any]]:
            base = super().execute_query_all_async
            return await self._patiently(lambda: base(query, **arguments))

        async def listen_notify(self, on_notification: Any, channels: Any) -> None:
            base = super().listen_notify  # returns only by raising: it listens until then
            await self._patiently(lambda: base(on_notification, channels))

    return PatientConnector


def _wait_ended(record: logging.LogRecord) -> bool:
    """False for a record about a WaitEnded: the error the worker exits with says it."""
    error = record.exc_info[1] if record.exc_info else None
    while error is not None:
        if isinstance(error, WaitEnded):
            return False
        error = error.__cause__
    return True


class _OneLineOutages(logging.Formatter):
    """Log lines as they are, except that a lost database is a reason, not a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and lost(record.exc_info[1]):
            error = record.exc_info[1]
            assert error is not None
            record = logging.makeLogRecord(
                {**record.__dict__, "exc_info": None, "exc_text": None, "args": None}
                | {"msg": f"{record.getMessage()} ({_reason(error, '')})"}
            )
        return super().format(record)


def configure_worker_logging(stream: IO[str] | None = None) -> None:
    """What a worker process prints on stderr: warnings and errors, one line each.

    Procrastinate's and asyncio's records and this module's go to one handler; a record
    caused by a lost database carries its reason instead of a traceback (the outage itself
    is reported once, by the OutageWatch). Any other error keeps its traceback: that is a
    bug to see. psycopg's own warnings ("error ignored terminating <Pipeline>: the
    connection is lost") are cleanup after a connection already reported lost, so only its
    errors are shown. Called once, at the edge (``handoff worker``).
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLineOutages("worker: %(message)s"))
    handler.addFilter(_wait_ended)
    for name, level in (
        ("procrastinate", logging.WARNING),
        ("asyncio", logging.WARNING),
        ("psycopg", logging.ERROR),
        (__name__, logging.WARNING),
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(h.formatter, _OneLineOutages) for h in logger.handlers):
            logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(level)


def _report_task_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A job task that ended on a lost database (its status could not be saved): one line.

    Its job stays ``running`` in the queue; a live worker re-queues it once this worker's
    heartbeat is stale. Anything else goes to asyncio's default handler.
    """
    error = context.get("exception")
    if lost(error):
        assert error is not None
        task = context.get("task") or context.get("future")
        name = task.get_name() if isinstance(task, asyncio.Task) else "a task"
        log.warning("%s ended without saving its status: %s", name, _reason(error, ""))
        return
    loop.default_exception_handler(context)


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
        self._watching = _Watching()
        self.connector = _patient_connector_class()(
            watching=self._watching,
            conninfo=url,
            min_size=1,
            max_size=4,
            timeout=settings.database_timeout,
            # a pool that gave up reconnecting connects afresh on the next request, so a
            # worker is not left waiting for a retry scheduled minutes ahead
            reconnect_timeout=settings.database_timeout,
            kwargs={
                "application_name": application_name(),
                "connect_timeout": max(2, round(settings.database_timeout)),
            },
        )
        self.app: procrastinate.App = procrastinate.App(connector=self.connector)
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
            if not lost(error):
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
            if _queue_exists(conn):
                return False
            conn.execute(SchemaManager.get_schema(), prepare=False)  # many statements
            return True

    # -- submitting ------------------------------------------------------------------------

    @contextlib.contextmanager
    def queue_locks(self, thread_ids: list[str]) -> Iterator[PgConnection]:
        """Hold the queue lock of each thread (waiting for other submissions of them).

        Yields the dedicated connection holding them, for the checks made under them. The
        wait is bounded by ``HANDOFF_DATABASE_TIMEOUT``; a submission holds the locks for
        milliseconds, so running out of it means a stuck session (ThreadBusy names it).
        Polled with ``pg_try_advisory_lock`` rather than waited for inside the server, for
        the reason ``app.storage.postgres.schema_lock`` gives.
        """
        self.ensure_schema()
        with self._reachable(), connect(self.url, self.settings.database_timeout) as conn:
            schema = current_schema(conn)
            keys = sorted({advisory_key("handoff-queue", schema, tid) for tid in thread_ids})
            deadline = time.monotonic() + self.settings.database_timeout
            while True:
                row = conn.execute(
                    "SELECT count(*) FILTER (WHERE pg_try_advisory_lock(k)) AS got "
                    "FROM unnest(%s::bigint[]) AS k",
                    (keys,),
                ).fetchone()
                if row and row["got"] == len(keys):
                    break
                conn.execute("SELECT pg_advisory_unlock_all()")  # none held while waiting
                if time.monotonic() > deadline:
                    raise ThreadBusy(
                        f"another submission of {', '.join(map(repr, thread_ids[:3]))} has "
                        f"held its queue lock for over {self.settings.database_timeout:g}s; "
                        "nothing was queued"
                    )
                time.sleep(QUEUE_LOCK_POLL)
            try:
                yield conn
            finally:
                if not conn.closed:  # closing the session releases them as well
                    conn.execute("SELECT pg_advisory_unlock_all()")

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
        """Queue a new thread's run; refused if the thread has a job not yet finished."""
        [job] = self.submit_runs([(thread_id, task)])
        return job

    def submit_runs(self, runs: list[tuple[str, TaskSpec]]) -> list[int]:
        """Queue many threads' runs on one connection (batches); all or none are queued.

        Under the threads' queue locks, a thread with an unfinished job refuses the whole
        batch (ThreadQueued). Whether a thread already has checkpoints is not checked
        here: ``Workflow.submit`` checks that (under the thread lock); this is for ids
        that are new, as a batch's generated ones are.
        """
        thread_ids = [thread_id for thread_id, _ in runs]
        with self._opened(), self.queue_locks(thread_ids) as conn:
            busy = _unfinished_jobs(conn, thread_ids)
            if busy:
                first = next(tid for tid in thread_ids if tid in busy)
                raise queued_refusal(first, busy[first], "nothing was queued")
            return [
                self.defer(RUN, thread_id, task=task.model_dump(mode="json"))
                for thread_id, task in runs
            ]

    def defer(self, name: str, thread_id: str, **kwargs: Any) -> int:
        """One job for the thread, locked to it; callers hold the thread's queue lock.

        The ``queueing_lock`` stays as a second line: two queued jobs of one thread are
        refused by the database itself, whoever forgot the queue lock.
        """
        from procrastinate.exceptions import AlreadyEnqueued

        with self._opened() as app:
            try:
                return app.configure_task(
                    name, lock=thread_id, queueing_lock=thread_id, queue=QUEUE
                ).defer(thread_id=thread_id, **kwargs)
            except AlreadyEnqueued as error:
                raise ThreadQueued(
                    f"thread {thread_id!r} already has a queued job; nothing was queued "
                    f"(see `handoff status {thread_id}`)",
                    job_id=0,
                    task=name,
                ) from error

    # -- looking up ------------------------------------------------------------------------

    def _jobs(self, where: str, params: tuple[Any, ...]) -> list[JobState]:
        """Jobs of the queue matching ``where``, latest per thread first; [] if no queue yet."""
        with self._reachable(), connect(self.url, self.settings.database_timeout) as conn:
            if not _queue_exists(conn):
                return []
            rows = conn.execute(
                f"SELECT DISTINCT ON (lock) {_JOB_COLUMNS} FROM procrastinate_jobs "
                f"WHERE queue_name = %s AND {where} ORDER BY lock, id DESC",
                (QUEUE, *params),
            ).fetchall()
        return [_job(row) for row in rows]

    def job_of(self, thread_id: str) -> JobState | None:
        """The thread's latest job, or None if it never had one (or the queue is not set up)."""
        found = self._jobs("lock = %s", (thread_id,))
        return found[0] if found else None

    def unstarted(self) -> dict[str, JobState]:
        """Threads whose latest job is queued or running, by id.

        A submitted thread has a job before a worker saves its first step.
        """
        return {job.thread_id: job for job in self._jobs("true", ()) if job.unfinished}

    # -- working ---------------------------------------------------------------------------

    def work(self, concurrency: int, *, burst: bool = False) -> None:
        """Run jobs until stopped (SIGINT/SIGTERM finish the jobs in hand first).

        ``burst`` stops once no job is left instead of waiting for more (batch runs, CI).
        A database that cannot be reached when the worker starts is reported at once as
        the project's error (exit code 9, password masked): a wrong URL is not an outage.
        Once running, the worker waits out a lost database (see ``OutageWatch``).
        """
        with self._reachable():
            self.ensure_schema()
            asyncio.run(self._work(concurrency, burst))

    async def _work(self, concurrency: int, burst: bool) -> None:
        from procrastinate.worker import Worker

        heartbeat = self.settings.worker_heartbeat_seconds
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_report_task_error)
        watch = OutageWatch(self.url, self.settings.worker_outage_seconds)
        async with self.app.open_async():
            worker = Worker(
                app=self.app,
                queues=[QUEUE],
                concurrency=concurrency,
                wait=not burst,
                install_signal_handlers=False,  # ours: they also end a wait for the database
                update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=3 * heartbeat,
            )

            def stop() -> None:
                for number in (signal.SIGINT, signal.SIGTERM):  # a second signal: default
                    loop.remove_signal_handler(number)
                watch.stopping.set()
                worker.stop()  # type: ignore[no-untyped-call]

            for number in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(number, stop)
            self._watching.watch = watch
            recovery = asyncio.create_task(self._recover_stalled(heartbeat, watch))
            try:
                await worker.run()  # type: ignore[no-untyped-call]
            finally:
                self._watching.watch = None
                for number in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(number)
                recovery.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await recovery
                WORKFLOWS.close_all()

    async def _recover_stalled(self, heartbeat: float, watch: OutageWatch) -> None:
        """Put back in the queue the jobs of workers that stopped sending heartbeats.

        A worker killed mid-job leaves its job ``doing``; once its heartbeat is three
        intervals old, any live worker re-queues the job, and the thread resumes from its
        last checkpoint on whichever worker takes it. Right after an outage every worker's
        heartbeat is old, so none is judged until three intervals after it ended.
        """
        manager = self.app.job_manager
        while True:
            await asyncio.sleep(heartbeat)
            if not watch.settled(3 * heartbeat):
                continue
            stalled = await manager.get_stalled_jobs(
                queue=QUEUE, seconds_since_heartbeat=3 * heartbeat
            )
            for job in stalled:
                log.warning("re-queueing job %s of thread %s: its worker stopped", job.id, job.lock)
                await manager.retry_job(job)
