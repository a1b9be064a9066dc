"""The queue's guard: a thread with an unfinished job is left to it.

Such a job brings the thread as far as it goes; running, resuming or cancelling the
thread meanwhile would drop it. Whoever opens a Workflow over PostgreSQL gives it this
guard (``fleet_workflow``; the CLI does), and the Workflow asks it while holding the
thread's lock, which submitting takes too. The check reads the jobs table through the
Workflow's own pool: no Procrastinate import, so it costs a command nothing to carry.

A worker's own Workflows have no guard: the queue runs a thread's jobs one at a time, in
order, and a job's body is the one way in that passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.errors import DatabaseUnavailable
from app.fleet.jobs import queued_refusal, unfinished_job
from app.settings import Settings
from app.storage.postgres import describe_url, is_outage, is_postgres_url
from app.workflow import Workflow
from graphs import Wiring

if TYPE_CHECKING:
    from app.storage.backends import Backend


class QueueGuard:
    """Refuses (ThreadQueued, naming the job) a write to a thread the queue holds."""

    def __init__(self, url: str) -> None:
        self.url = url

    def refuse_if_held(self, backend: Backend, thread_id: str, consequence: str) -> None:
        """Raise ThreadQueued if the thread has a queued or running job.

        A lost database is DatabaseUnavailable: nothing was changed.
        """
        pool = backend.pool
        if pool is None:
            return  # no PostgreSQL pool: no queue can hold the thread
        try:
            with pool.connection() as conn:
                job = unfinished_job(conn, thread_id)
        except Exception as error:
            if not is_outage(error):
                raise
            raise DatabaseUnavailable(
                f"database unavailable at {describe_url(self.url)} ({type(error).__name__}: "
                f"{' '.join(str(error).split())}); nothing was changed"
            ) from error
        if job is not None:
            raise queued_refusal(thread_id, job, consequence)


def fleet_workflow(
    settings: Settings | None = None,
    *,
    read_only: bool = False,
    wiring: Wiring | None = None,
    graph: str | None = None,
) -> Workflow:
    """A Workflow that leaves the threads the fleet holds to it.

    On PostgreSQL it is given the QueueGuard; elsewhere no queue can hold a thread, so it
    is a plain Workflow. ``read_only``, ``wiring`` and ``graph`` are the Workflow's.
    """
    resolved = settings or Settings()
    url = resolved.resolved_database_url()
    guard = QueueGuard(url) if is_postgres_url(url) else None
    return Workflow(resolved, read_only=read_only, wiring=wiring, graph=graph, guard=guard)
