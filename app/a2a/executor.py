"""The agent: carries out a message's plan on its thread and publishes what the thread says.

``execute`` starts the run in a worker thread (``app.a2a.threads``), publishes a working
status update per finished node (the summaries of the contracts it wrote, as the CLI's
progress lines), and when the run stops publishes the task as its thread now tells it:
its artifacts, then its state. So the stream a client watched ends where ``tasks/get``
and ``handoff status`` stand. ``cancel`` stops the run after its current step and makes
the audited cancel ``handoff cancel`` makes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatus
from a2a.utils.errors import InternalError, TaskNotCancelableError

from app.a2a.errors import a2a_error
from app.a2a.parts import agent_message
from app.a2a.plans import Plan
from app.a2a.store import ThreadTaskStore
from app.a2a.threads import Stopped, Threads
from app.errors import ThreadFinished, ThreadNotFound
from app.workflow.progress import step_summary
from contracts import RunOutcome

PLAN = "handoff_plan"
"""Where the request handler leaves the plan it admitted, in the call context's state."""

CANCEL_REASON = "cancelled by an A2A client (tasks/cancel)"
TASKS = logging.getLogger("handoff.a2a.tasks")
"""One line per task the server ran: what it did, the thread, how it ended, how long it took
(``run rosetta-1: TASK_STATE_COMPLETED in 1.42 s``), as a fleet worker prints per job."""


class WorkflowExecutor(AgentExecutor):
    """Runs, resumes and cancels threads for the A2A server."""

    def __init__(self, threads: Threads, store: ThreadTaskStore) -> None:
        self.threads = threads
        self.store = store
        self._ended: set[str] = set()
        """Tasks whose end a request is publishing: exactly one publishes it."""
        self._cancelled: dict[str, asyncio.Event] = {}
        """Tasks a cancel is ending, set once it has published their end."""

    def _claim_end(self, task_id: str) -> bool:
        """Whether the caller publishes the task's end (no ``await`` between test and set)."""
        if task_id in self._ended:
            return False
        self._ended.add(task_id)
        return True

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Carry out the admitted plan and publish until the thread stops or pauses."""
        task_id, context_id = str(context.task_id), str(context.context_id)
        began, ended = time.monotonic(), "stopped"
        plan = context.call_context.state.get(PLAN)
        try:
            ended = await self._execute(task_id, context_id, context, event_queue)
        except BaseException as error:
            ended = f"failed ({type(error).__name__})"
            raise
        finally:
            self._ended.discard(task_id)
            self.threads.release(task_id)
            action = plan.action if isinstance(plan, Plan) else "task"
            TASKS.info("%s %s: %s in %.2f s", action, task_id, ended, time.monotonic() - began)

    async def _execute(
        self, task_id: str, context_id: str, context: RequestContext, event_queue: EventQueue
    ) -> str:
        """Carry out the plan; how the task ended (its state, or ``stopped`` by a cancel)."""
        plan = context.call_context.state.get(PLAN)
        if not isinstance(plan, Plan):  # every send passes WorkflowRequestHandler._admit
            raise InternalError(message=f"task {task_id!r}: the message was not admitted")
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            submitted = Task(
                id=task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message] if context.message else [],
            )
            await event_queue.enqueue_event(submitted)
        await updater.start_work(
            agent_message(plan.describe(), task_id=task_id, context_id=context_id)
        )
        loop = asyncio.get_running_loop()
        steps: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

        def progress(node: str, values: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(steps.put_nowait, step_summary(node, values))

        run = self.threads.start(task_id, plan, progress)
        finished: asyncio.Future[RunOutcome] = asyncio.wrap_future(run.future)
        while True:
            step: asyncio.Future[tuple[str, str]] = asyncio.ensure_future(steps.get())
            waiting: list[asyncio.Future[Any]] = [step, finished]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                break
            name, summary = step.result()
            if not run.stop.is_set() and name != "paused":
                line = f"{name}: {summary}".rstrip(": ")
                message = agent_message(line, task_id=task_id, context_id=context_id)
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING, message, metadata={"node": name}
                )
        ended = "stopped"
        try:
            ended = finished.result().state.value
        except Stopped:
            pass  # a cancel stopped it and publishes the end it made (or the server stops)
        except Exception as error:
            raise a2a_error(error) from error
        else:
            if self._claim_end(task_id):
                await self.publish(task_id, event_queue, updater)
                return ended
        cancelling = self._cancelled.get(task_id)
        if cancelling is not None:  # the sender hears the end the cancel publishes
            await cancelling.wait()
        return ended

    async def publish(self, task_id: str, event_queue: EventQueue, updater: TaskUpdater) -> None:
        """The task as its thread tells it now: its artifacts, then its status."""
        task = await asyncio.to_thread(self.store.read, task_id)
        if task is None:
            return
        for artifact in task.artifacts:
            await event_queue.enqueue_event(
                TaskArtifactUpdateEvent(
                    task_id=task_id, context_id=task.context_id, artifact=artifact, last_chunk=True
                )
            )
        metadata = {key: value for key, value in task.metadata.items()}
        await updater.update_status(task.status.state, task.status.message, metadata=metadata)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the run after its current step, then cancel the thread as the CLI does.

        What is published is where the thread then stands: cancelled, or the end it
        reached first (a run in its last node is let finish).
        """
        task_id = str(context.task_id)
        done = self._cancelled.setdefault(task_id, asyncio.Event())
        try:
            run = self.threads.running(task_id)
            if run is not None:
                run.stop.set()
                with contextlib.suppress(Exception):  # Stopped, or the failure execute reports
                    await asyncio.wrap_future(run.future)
            with contextlib.suppress(TaskNotCancelableError):  # it ended first: say how
                await audited_cancel(self.threads, task_id)
            if self._claim_end(task_id):
                updater = TaskUpdater(event_queue, task_id, str(context.context_id))
                if await asyncio.to_thread(self.store.read, task_id) is None:  # never began
                    await updater.cancel(
                        agent_message(
                            "cancelled before it began",
                            task_id=task_id,
                            context_id=str(context.context_id),
                        )
                    )
                else:
                    await self.publish(task_id, event_queue, updater)
        finally:
            done.set()
            self._cancelled.pop(task_id, None)


async def audited_cancel(threads: Threads, task_id: str) -> None:
    """The cancel ``handoff cancel`` makes (recorded in the audit), with A2A's errors.

    A thread that never began (a task stopped while queued) has nothing to cancel.
    """
    try:
        await asyncio.to_thread(threads.cancel, task_id, CANCEL_REASON, "a2a client")
    except ThreadFinished as error:
        raise TaskNotCancelableError(message=error.message) from error
    except ThreadNotFound:
        return
    except Exception as error:
        raise a2a_error(error) from error
