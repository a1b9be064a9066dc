"""The threads behind the A2A tasks: read, run, resumed and cancelled as the CLI does it.

Every call here is blocking (the Workflow is), so the async server calls it in a worker
thread. Reads share one read-only Workflow under a lock; each run opens its own Workflow
in its own worker thread and holds the thread's lock for as long as it runs, exactly like
``handoff run``: one writer per thread, whichever way in it came by. On PostgreSQL the
Workflow is the fleet's, so a thread a queued job holds is left to its job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from app.a2a.plans import Plan
from app.opening import open_workflow
from app.settings import Settings
from app.workflow import Workflow
from contracts import RunOutcome
from graphs.node_runner import SEALED, record_event

REFINES = "a2a: refines task "
"""The audit label that links a task to the ended task it refines (read back by the tasks)."""
SEALER = "an A2A task"
"""Who seals the threads this server starts: once ended, none is revised in place."""


class Stopped(Exception):  # noqa: N818  # not an error: the run was asked to stop
    """Raised from a run's progress callback to end it after its current step."""


@dataclass
class Run:
    """A run this server drives: its result to come and the flag that stops it."""

    future: Future[RunOutcome]
    stop: threading.Event = field(default_factory=threading.Event)


class Threads:
    """The server's access to threads: shared reads, one Workflow per run."""

    def __init__(self, settings: Settings, *, max_runs: int = 4) -> None:
        self.settings = settings
        self._reader: Workflow | None = None
        self._read_lock = threading.Lock()
        self._runs: dict[str, Run] = {}
        self._claimed: set[str] = set()
        self._runs_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_runs, thread_name_prefix="a2a-run")

    @contextmanager
    def reading(self) -> Iterator[Workflow]:
        """The shared read-only Workflow, opened on first use; one reader at a time."""
        with self._read_lock:
            if self._reader is None:
                reader = open_workflow(self.settings, read_only=True)
                reader.open()
                self._reader = reader
            yield self._reader

    @contextmanager
    def writing(self) -> Iterator[Workflow]:
        """A Workflow of this call's own, closed when it is done."""
        with open_workflow(self.settings) as workflow:
            yield workflow

    def running(self, task_id: str) -> Run | None:
        """The run this server drives for ``task_id``, while it does."""
        with self._runs_lock:
            return self._runs.get(task_id)

    def claim(self, task_id: str) -> bool:
        """Reserve ``task_id`` for one request, from its check to the end it publishes.

        False if another request holds it or a run of this server drives it: two messages
        sent to one task at once must not both pass the check and run one after the other.
        """
        with self._runs_lock:
            if task_id in self._claimed or task_id in self._runs:
                return False
            self._claimed.add(task_id)
            return True

    def release(self, task_id: str) -> None:
        """End a request's claim (idempotent)."""
        with self._runs_lock:
            self._claimed.discard(task_id)

    def start(
        self, task_id: str, plan: Plan, progress: Callable[[str, dict[str, Any]], None]
    ) -> Run:
        """Carry out ``plan`` on thread ``task_id`` in a worker thread; its Run at once."""
        with self._runs_lock:
            if task_id in self._runs:
                raise RuntimeError(f"task {task_id!r} is already running in this server")
            run = Run(future=Future())
            self._runs[task_id] = run

        def stoppable(node: str, values: dict[str, Any]) -> None:
            progress(node, values)
            if run.stop.is_set() and "outcome" not in values:  # an ended run is let end
                raise Stopped(task_id)

        def work() -> None:
            if not run.future.set_running_or_notify_cancel():
                return
            outcome: RunOutcome | None = None
            failure: BaseException | None = None
            try:
                if run.stop.is_set():  # stopped while queued: nothing was started
                    raise Stopped(task_id)
                outcome = self._carry_out(task_id, plan, stoppable)
            except BaseException as error:  # handed to whoever awaits the run
                failure = error
            with self._runs_lock:  # not running before anyone hears it ended
                self._runs.pop(task_id, None)
            if failure is not None:
                run.future.set_exception(failure)
            else:
                run.future.set_result(outcome)  # type: ignore[arg-type]  # set when no failure

        self._pool.submit(work)
        return run

    def _carry_out(
        self, task_id: str, plan: Plan, progress: Callable[[str, dict[str, Any]], None]
    ) -> RunOutcome:
        with self.writing() as workflow:
            if plan.action == "run":
                assert plan.spec is not None
                marks = [f"{SEALED}{SEALER}"]  # an ended A2A task is never restarted
                if plan.refines is not None:
                    marks.append(f"{REFINES}{plan.refines}")
                for label in marks:
                    record_event(
                        workflow.ledger,
                        task_id,
                        task_version=plan.spec.task_version,
                        label=label,
                        detail=label,
                        clock=workflow.context.clock,
                    )
                return workflow.run(plan.spec, task_id, on_progress=progress)
            decision = plan.decision.model_dump(mode="json") if plan.decision else None
            return workflow.resume(task_id, decision, on_progress=progress)

    def cancel(self, task_id: str, reason: str, decided_by: str) -> RunOutcome:
        """The audited cancel ``handoff cancel`` makes."""
        with self.writing() as workflow:
            return workflow.cancel(task_id, reason, decided_by=decided_by)

    def close(self) -> None:
        """Stop the runs in flight after their current step, then release the connections.

        A stopped thread stays ``working`` with its finished steps saved; a message sent
        to its task once the server is back resumes it.
        """
        with self._runs_lock:
            for run in self._runs.values():
                run.stop.set()
        self._pool.shutdown(wait=True)
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
