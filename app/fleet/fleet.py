"""The Procrastinate app on the project's PostgreSQL: its tables, the queue lock, deferring jobs."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from app.errors import (
    DatabaseUnavailable,
    QueueUnavailable,
    ThreadBusy,
    ThreadQueued,
)
from app.fleet.bodies import decide_thread, run_thread
from app.fleet.jobs import (
    DECIDE,
    QUEUE,
    RUN,
    queue_exists,
    queued_refusal,
    unfinished_jobs,
)
from app.fleet.outage import (
    Watching,
    patient_connector_class,
    reachable,
)
from app.settings import Settings
from app.storage.encryption import key_ring, seal_value
from app.storage.postgres import (
    advisory_key,
    application_name,
    connect,
    current_schema,
    is_postgres_url,
    schema_lock,
)
from contracts import TaskSpec

if TYPE_CHECKING:
    import procrastinate

    from app.storage.postgres import PgConnection

_T = TypeVar("_T")

RETRIED = (ThreadBusy, DatabaseUnavailable)
"""Errors a job is retried on: the thread is briefly held elsewhere, or the database is away."""
QUEUE_LOCK_POLL = 0.02
"""Seconds between a submission's attempts to take its threads' queue locks."""


class Fleet:
    """The Procrastinate app on the settings' database: its tables, queue locks and jobs.

    ``app.fleet.worker.work`` runs a worker on it; ``app.fleet.Queue`` submits through it.
    """

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
        self.watching = Watching()
        self.connector = patient_connector_class()(
            watching=self.watching,
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

    # -- schema ----------------------------------------------------------------------------

    def ensure_schema(self) -> bool:
        """Create Procrastinate's tables in the database's schema once; True if it did."""
        from procrastinate.schema import SchemaManager

        with (
            reachable(self.url),
            connect(self.url, self.settings.database_timeout) as conn,
            schema_lock(conn),
        ):
            if queue_exists(conn):
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
        with reachable(self.url), connect(self.url, self.settings.database_timeout) as conn:
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
        with reachable(self.url), self.app.open() as app:
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
        here: ``Queue.submit`` checks that (under the thread lock); this is for ids
        that are new, as a batch's generated ones are.
        """
        thread_ids = [thread_id for thread_id, _ in runs]
        with self._opened(), self.queue_locks(thread_ids) as conn:
            busy = unfinished_jobs(conn, thread_ids)
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

        keys = key_ring(self.settings)  # what a job carries is sealed like the thread
        sealed = {key: seal_value(keys, value) for key, value in kwargs.items()}
        with self._opened() as app:
            try:
                return app.configure_task(
                    name, lock=thread_id, queueing_lock=thread_id, queue=QUEUE
                ).defer(thread_id=thread_id, **sealed)
            except AlreadyEnqueued as error:
                raise ThreadQueued(
                    f"thread {thread_id!r} already has a queued job; nothing was queued "
                    f"(see `handoff status {thread_id}`)",
                    job_id=0,
                    task=name,
                ) from error
