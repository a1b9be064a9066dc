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
from a2a.types import (
    CancelTaskRequest,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from app.a2a.executor import PLAN, WorkflowExecutor, audited_cancel
from app.a2a.plans import Plan, plan_for
from app.a2a.store import ThreadTaskStore
from app.a2a.threads import Threads
from contracts import TaskState as Lifecycle

TERMINAL = frozenset(TaskState.Value(state.value) for state in Lifecycle if state.ended)
"""The ended states, as the SDK's enum numbers them."""


class WorkflowRequestHandler(DefaultRequestHandler):
    """DefaultRequestHandler whose sends are admitted first and whose cancels are audited."""

    def __init__(self, threads: Threads, store: ThreadTaskStore, **kwargs: object) -> None:
        super().__init__(WorkflowExecutor(threads, store), store, **kwargs)  # type: ignore[arg-type]
        self.threads = threads
        self.store = store

    async def _admit(self, params: SendMessageRequest, context: ServerCallContext) -> None:
        """Read the message into a plan, or refuse it; a new task's context is its spec's id.

        A message to an existing task claims it (``Threads.claim``) until the end its
        request publishes; a second message meanwhile is refused as busy.
        """
        message: Message = params.message
        claimed = bool(message.task_id) and self.threads.claim(message.task_id)
        try:
            plan = await asyncio.to_thread(self._plan, message, claimed)
        except BaseException:
            if claimed:
                self.threads.release(message.task_id)
            raise
        message.context_id = message.context_id or plan.context_id
        context.state[PLAN] = plan

    def _plan(self, message: Message, claimed: bool) -> Plan:
        busy = bool(message.task_id) and not claimed
        with self.threads.reading() as workflow:
            return plan_for(workflow, message, running=busy)

    def _release(self, params: SendMessageRequest) -> None:
        """A request that failed before its executor ran gives its claim back."""
        if params.message.task_id:
            self.threads.release(params.message.task_id)

    async def on_message_send(  # noqa: D102  # as the SDK's, admitted first
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        await self._admit(params, context)
        try:
            answer: Message | Task = await super().on_message_send(params, context)
        except BaseException:
            self._release(params)
            raise
        if isinstance(answer, Task):  # the task as its thread tells it, not the SDK's copy
            derived = await self.store.get(answer.id, context)
            return derived if derived is not None else answer
        return answer

    async def on_message_send_stream(  # noqa: D102  # as the SDK's, admitted first
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        await self._admit(params, context)
        try:
            async for event in super().on_message_send_stream(params, context):
                yield event
        except BaseException:
            self._release(params)
            raise

    async def on_subscribe_to_task(  # noqa: D102  # only to what this server drives or holds
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        task_id = params.id
        held = await self._active_task_registry.get(task_id) is not None
        if not held and self.threads.running(task_id) is None:
            if await self.store.get(task_id, context) is None:
                raise TaskNotFoundError(message=f"no task {task_id!r}")
            raise UnsupportedOperationError(
                message=f"task {task_id!r} is not running in this server, so there is "
                "nothing to stream; read it with tasks/get"
            )
        async for event in super().on_subscribe_to_task(params, context):
            yield event

    async def on_cancel_task(  # noqa: D102  # the audited cancel, wherever the task stands
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        task_id = params.id
        current = await self.store.get(task_id, context)
        if current is None:
            raise TaskNotFoundError(message=f"no task {task_id!r}")
        if current.status.state in TERMINAL:
            raise TaskNotCancelableError(
                message=f"task {task_id!r} has ended ({TaskState.Name(current.status.state)}); "
                "nothing to cancel"
            )
        if await self._active_task_registry.get(task_id) is not None:
            cancelled: Task | None = await super().on_cancel_task(params, context)
            return await self.store.get(task_id, context) or cancelled
        await audited_cancel(self.threads, task_id)
        return await self.store.get(task_id, context)
