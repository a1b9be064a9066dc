"""The queue's jobs of each thread, read on a connection: what the guard and submissions see."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from app.errors import (
    ThreadQueued,
)
from app.storage.encryption import KeyRing, open_value

if TYPE_CHECKING:
    from app.storage.postgres import PgConnection

_T = TypeVar("_T")


QUEUE = "handoff"
RUN = "handoff.run_thread"
DECIDE = "handoff.decide"


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


JOB_COLUMNS = "lock, id, task_name, status::text AS status, attempts, worker_id"


def queue_exists(conn: PgConnection) -> bool:
    """Whether Procrastinate's tables exist: until a queue is set up, no thread has a job."""
    row = conn.execute("SELECT to_regclass('procrastinate_jobs') AS found").fetchone()
    return bool(row and row["found"])


def job_from_row(row: Mapping[str, Any]) -> JobState:
    """A row of ``JOB_COLUMNS`` as the JobState it describes."""
    return JobState(
        row["lock"], row["id"], row["task_name"], row["status"], row["attempts"], row["worker_id"]
    )


def unfinished_jobs(conn: PgConnection, thread_ids: list[str]) -> dict[str, JobState]:
    """The oldest queued or running job of each of ``thread_ids`` that has one."""
    if not queue_exists(conn):
        return {}
    rows = conn.execute(
        f"SELECT DISTINCT ON (lock) {JOB_COLUMNS} FROM procrastinate_jobs "
        "WHERE queue_name = %s AND lock = ANY(%s) AND status IN ('todo', 'doing') "
        "ORDER BY lock, id",
        (QUEUE, thread_ids),
    ).fetchall()
    return {row["lock"]: job_from_row(row) for row in rows}


def unfinished_job(conn: PgConnection, thread_id: str) -> JobState | None:
    """The thread's queued or running job, if it has one (None where no queue exists)."""
    return unfinished_jobs(conn, [thread_id]).get(thread_id)


def decision_jobs(
    conn: PgConnection, thread_id: str, keys: KeyRing | None = None
) -> list[tuple[JobState, dict[str, Any]]]:
    """The thread's decision jobs that were not given up on, newest first, with their decision.

    ``keys``: the decisions were sealed under them (``app.storage.encryption``).
    """
    if not queue_exists(conn):
        return []
    rows = conn.execute(
        f"SELECT {JOB_COLUMNS}, args -> 'decision' AS decision FROM procrastinate_jobs "
        "WHERE queue_name = %s AND lock = %s AND task_name = %s "
        "AND status IN ('todo', 'doing', 'succeeded') ORDER BY id DESC",
        (QUEUE, thread_id, DECIDE),
    ).fetchall()
    return [(job_from_row(row), dict(open_value(keys, row["decision"]))) for row in rows]


def queued_refusal(thread_id: str, job: JobState, consequence: str) -> ThreadQueued:
    """The error for a thread the fleet holds: names the job, says what was not done."""
    return ThreadQueued(
        f"thread {thread_id!r} is queued for the worker fleet: its {job.describe()} has not "
        f"finished; {consequence}. Wait for it (see `handoff status {thread_id}`)",
        job_id=job.job_id,
        task=job.task,
    )


def latest_jobs(conn: PgConnection, where: str, params: tuple[Any, ...]) -> list[JobState]:
    """Jobs of the queue matching ``where``, latest per thread first; [] if no queue yet."""
    if not queue_exists(conn):
        return []
    rows = conn.execute(
        f"SELECT DISTINCT ON (lock) {JOB_COLUMNS} FROM procrastinate_jobs "
        f"WHERE queue_name = %s AND {where} ORDER BY lock, id DESC",
        (QUEUE, *params),
    ).fetchall()
    return [job_from_row(row) for row in rows]
