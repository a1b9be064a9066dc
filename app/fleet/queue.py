"""The queue as a Workflow's caller sees it: submit runs and decisions, read their jobs.

Built over an open Workflow, which checks what is queued (the task, the decision against
the thread's open request) and supplies the thread's lock. Submitting needs PostgreSQL
and the queue extra (QueueUnavailable otherwise); reading jobs needs only the database,
and where no queue can exist (SQLite) there are none.
"""

from __future__ import annotations

from typing import Any

from app.fleet.fleet import Fleet
from app.fleet.jobs import JobState, latest_jobs
from app.fleet.outage import reachable
from app.fleet.submission import QueuedDecision, queue_decision, queue_run
from app.storage.postgres import connect, is_postgres_url
from app.workflow import Workflow, check_thread_id
from contracts import TaskSpec


class Queue:
    """The worker fleet's queue, over ``workflow``'s settings and storage."""

    def __init__(self, workflow: Workflow) -> None:
        self.workflow = workflow
        self.url = workflow.settings.resolved_database_url()

    def submit(self, task: TaskSpec | str, thread_id: str | None = None) -> str:
        """Queue a new thread for the worker fleet (PostgreSQL); returns its id.

        The task is checked as ``Workflow.run`` checks it before anything is queued; a
        worker starts the thread. Submitting an id that exists or has an unfinished job is
        refused (ThreadExists, ThreadQueued), checked again under the thread's locks.
        """
        spec, thread = self.workflow.new_thread(task, thread_id)
        queue_run(Fleet(self.workflow.settings), self.workflow, thread, spec)
        return thread

    def submit_decision(self, thread_id: str, decision: Any) -> QueuedDecision:
        """Queue a decision for a waiting thread, checked now against its open request.

        Decisions of one thread are serialized (``app.fleet.submission.queue_decision``):
        while a decision job is unfinished, or once one answered the request, the same
        decision returns that job (``duplicate``) and a different one is refused
        (DecisionConflict).
        """
        thread = check_thread_id(thread_id)
        return queue_decision(Fleet(self.workflow.settings), self.workflow, thread, decision)

    def job(self, thread_id: str) -> JobState | None:
        """The thread's latest job (queued, running, done), or None if it never had one.

        A submitted thread has a job before it has a checkpoint: this is how ``status``
        tells "queued" from "unknown".
        """
        found = self._jobs("lock = %s", (check_thread_id(thread_id),))
        return found[0] if found else None

    def queued(self) -> dict[str, JobState]:
        """Threads whose latest job is queued or running, by id.

        A submitted thread has a job before a worker saves its first step.
        """
        return {job.thread_id: job for job in self._jobs("true", ()) if job.unfinished}

    def _jobs(self, where: str, params: tuple[Any, ...]) -> list[JobState]:
        if not is_postgres_url(self.url):
            return []  # no queue on this database
        timeout = self.workflow.settings.database_timeout
        with reachable(self.url), connect(self.url, timeout) as conn:
            return latest_jobs(conn, where, params)
