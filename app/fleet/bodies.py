"""What a worker runs for a job: bring the thread as far as it goes, again if retried."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from app.errors import (
    DecisionRequired,
    NotWaiting,
    ThreadExists,
    ThreadFinished,
)
from app.fleet.logs import JOBS
from app.settings import Settings
from app.storage.encryption import key_ring, open_value
from app.workflow import Workflow
from contracts import DecisionLog, RunOutcome, TaskSpec

if TYPE_CHECKING:
    pass

_T = TypeVar("_T")


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
        """The calling thread's open Workflow, opened on first use.

        It has no guard (``app.fleet.guard``): the job running on it is the queue's own
        way into its thread, the one the guard leaves every thread to.
        """
        workflow: Workflow | None = getattr(self._local, "workflow", None)
        with self._lock:  # close_all closed it: the next job opens one on today's settings
            if workflow is not None and workflow not in self._opened:
                workflow = None
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


def _as_far_as_it_goes(kind: str, thread_id: str, step: Callable[[Workflow], RunOutcome]) -> str:
    """Run a job's step; a pause for a person or a thread already ended also end the job."""
    began = time.monotonic()
    ended = "failed"
    try:
        try:
            ended = step(WORKFLOWS.current()).state.value
        except DecisionRequired:
            ended = "waiting"
        except ThreadFinished as finished:
            ended = finished.outcome.state.value
        except Exception as error:
            ended = f"failed ({type(error).__name__}: {str(error).splitlines()[0][:200]})"
            raise
        return ended
    finally:
        JOBS.info("%s %s: %s in %.2f s", kind, thread_id, ended, time.monotonic() - began)


def run_thread(thread_id: str, task: dict[str, Any]) -> str:
    """Job body: start the thread, or continue it from its last checkpoint (a retried job).

    A thread that exists must be this job's own (an earlier attempt started it, perhaps
    killed before its first step was saved): one started with another task would otherwise
    be resumed and this task silently dropped.
    """
    spec = TaskSpec.model_validate(open_value(key_ring(WORKFLOWS.current().settings), task))

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

    return _as_far_as_it_goes("run", thread_id, step)


def decide_thread(thread_id: str, decision: dict[str, Any]) -> str:
    """Job body: apply a queued decision, or, if a killed attempt already did, continue."""
    decision = open_value(key_ring(WORKFLOWS.current().settings), decision)
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

    return _as_far_as_it_goes("decide", thread_id, step)


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
