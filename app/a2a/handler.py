"""The SDK's request handler, with the project's checks in front of it.

A message is read into a plan (``app.a2a.plans``) before the SDK makes or touches a task,
so a bad one is refused with a specific error and the task stays as it was: an invalid
decision leaves it ``input-required``, a message to a busy task changes nothing. A cancel
of a task no run of this server holds (waiting for a person, or stopped by a crash) is
the audited cancel the CLI makes, not a status written beside the thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.types import CancelTaskRequest, Message, SendMessageRequest, Task
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

from app.a2a.errors import a2a_error
from app.a2a.executor import PLAN, WorkflowExecutor, audited_cancel
from app.a2a.plans import Plan, plan_for
from app.a2a.store import ThreadTaskStore
from app.a2a.threads import Threads
from contracts import RunOutcome


class WorkflowRequestHandler(DefaultRequestHandler):
    """DefaultRequestHandler whose sends are admitted first and whose cancels are audited."""

    def __init__(self, threads: Threads, store: ThreadTaskStore, **kwargs: object) -> None:
        super().__init__(WorkflowExecutor(threads, store), store, **kwargs)  # type: ignore[arg-type]
        self.threads = threads
        self.store = store

    async def _admit(self, params: SendMessageRequest, context: ServerCallContext) -> None:
        """Read the message into a plan, or refuse it; a new task's context is its spec's id."""
        message: Message = params.message
        plan = await asyncio.to_thread(self._plan, message)
        message.context_id = message.context_id or plan.context_id
        context.state[PLAN] = plan

    def _plan(self, message: Message) -> Plan:
        running = bool(message.task_id) and self.threads.running(message.task_id) is not None
        with self.threads.reading() as workflow:
            return plan_for(workflow, message, running=running)

    async def on_message_send(  # noqa: D102  # as the SDK's, admitted first
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        await self._admit(params, context)
        answer: Message | Task = await super().on_message_send(params, context)
        return answer

    async def on_message_send_stream(  # noqa: D102  # as the SDK's, admitted first
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        await self._admit(params, context)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def on_cancel_task(  # noqa: D102  # the audited cancel, wherever the task stands
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        task_id = params.id
        current = await asyncio.to_thread(self._outcome, task_id)
        if current is None:
            raise TaskNotFoundError(message=f"no task {task_id!r}")
        if current.state.ended:
            raise TaskNotCancelableError(
                message=f"task {task_id!r} has ended ({current.state.name.lower()}); "
                "nothing to cancel"
            )
        if await self._active_task_registry.get(task_id) is not None:
            cancelled: Task | None = await super().on_cancel_task(params, context)
            return cancelled
        await audited_cancel(self.threads, task_id)
        return await self.store.get(task_id, context)

    def _outcome(self, task_id: str) -> RunOutcome | None:
        with self.threads.reading() as workflow:
            try:
                if not workflow.threads_has(task_id):
                    return None
                return workflow.outcome(task_id)
            except Exception as error:
                raise a2a_error(error) from error
