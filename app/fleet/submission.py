"""Queueing a run or a decision: checked, and serialized with the thread's other submissions."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from app.errors import (
    DecisionConflict,
    NotWaiting,
    ThreadExists,
)
from app.fleet.fleet import Fleet
from app.fleet.jobs import (
    DECIDE,
    RUN,
    JobState,
    decision_jobs,
    queued_refusal,
    unfinished_job,
)
from app.storage.encryption import key_ring
from app.workflow import Workflow
from app.workflow.decisions import plain_decision
from contracts import HumanDecision, TaskSpec

if TYPE_CHECKING:
    pass

_T = TypeVar("_T")


@dataclass(frozen=True)
class QueuedDecision:
    """A decision the queue holds: the one just queued, or the same one queued before."""

    decision: HumanDecision
    job_id: int
    duplicate: bool
    """True when an identical decision was queued (or applied) already: nothing was added."""


def queue_run(fleet: Fleet, workflow: Workflow, thread_id: str, task: TaskSpec) -> int:
    """Queue a new thread's run: refused if the thread exists or has an unfinished job.

    Checked under the thread's queue lock (other submissions wait) and its thread lock
    (no run or resume is writing it), so no one can create or queue the thread between
    the check and the job.
    """
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


def queue_decision(
    fleet: Fleet, workflow: Workflow, thread_id: str, decision: Any
) -> QueuedDecision:
    """Queue a decision for a waiting thread, serialized with every other submission.

    Under the thread's queue lock: a run job not yet finished refuses it (ThreadQueued); a
    decision job not yet finished, or one that already answered the request this decision
    names, makes it a duplicate (the same decision: nothing queued, that job returned) or
    a conflict (DecisionConflict naming that job). Otherwise, holding the thread lock, the
    decision is checked against the request the thread waits on and queued.
    """
    with fleet.queue_locks([thread_id]) as conn:
        job = unfinished_job(conn, thread_id)
        if job is not None and job.task != DECIDE:
            raise queued_refusal(thread_id, job, "no decision was queued")
        if job is not None:
            queued = decision_jobs(conn, thread_id, key_ring(fleet.settings))
            theirs = next(d for j, d in queued if j.job_id == job.job_id)
            return _duplicate_or_conflict(thread_id, decision, job, theirs)
        with workflow.backend.writing(thread_id):
            request = workflow.pending(thread_id)
            named = _interrupt_of(decision)
            if request is None or (named is not None and named != request.interrupt_id):
                answered = [
                    (earlier, theirs)
                    for earlier, theirs in decision_jobs(conn, thread_id, key_ring(fleet.settings))
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


def _interrupt_of(decision: Any) -> str | None:
    plain = plain_decision(decision)
    named = plain.get("interrupt_id") if isinstance(plain, Mapping) else None
    return named if isinstance(named, str) else None


def _duplicate_or_conflict(
    thread_id: str, decision: Any, job: JobState, theirs: dict[str, Any]
) -> QueuedDecision:
    """The earlier job if ``decision`` is the one it carries; DecisionConflict otherwise."""
    queued = HumanDecision.model_validate(theirs)
    plain = plain_decision(decision)
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
