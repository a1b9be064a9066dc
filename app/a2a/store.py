"""The SDK's task store, read from the threads: the thread is the only record of a task.

The SDK saves a task after each event it applies; here a save is kept only until the
thread it starts has its first checkpoint (a moment after ``message/send``), so a
``tasks/get`` in that moment finds it; a task cancelled or refused before its thread began
is kept so for the life of the process (after a restart it was never there, as nothing
was done). After that every read is derived from the thread
(``app.a2a.tasks``), so a restarted server, the CLI and this server tell the same story.
Deleting a task is refused: the thread is the audit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task, TaskState
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import A2AError, InvalidParamsError, UnsupportedOperationError

from app.a2a.errors import a2a_error
from app.a2a.tasks import task_of
from app.a2a.threads import Threads

DEFAULT_PAGE = DEFAULT_LIST_TASKS_PAGE_SIZE
T = TypeVar("T")
R = TypeVar("R")


class ThreadTaskStore(TaskStore):
    """Tasks derived from threads; a task not yet begun kept in memory until it has begun."""

    def __init__(self, threads: Threads) -> None:
        self.threads = threads
        self._unborn: dict[str, Task] = {}
        self._lock = threading.Lock()

    def read(self, task_id: str, *, artifacts: bool = True) -> Task | None:
        """The task, derived from its thread (blocking)."""
        with self.threads.reading() as workflow:
            running = self.threads.running(task_id) is not None
            task = task_of(workflow, task_id, running=running, artifacts=artifacts)
        with self._lock:
            if task is not None:
                self._unborn.pop(task_id, None)
                return task
            return self._unborn.get(task_id)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Keep a task whose thread has no checkpoint yet; a begun task is its thread's."""
        with self._lock:
            if task.id in self._unborn or task.status.state == TaskState.TASK_STATE_SUBMITTED:
                kept = Task()
                kept.CopyFrom(task)
                self._unborn[task.id] = kept

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task as its thread tells it."""
        if not task_id:
            return None
        return await _answered(self.read, task_id)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """Every thread as a task, newest first, filtered by context and state, paged."""
        return await _answered(self._list, params)

    def _list(self, params: ListTasksRequest) -> ListTasksResponse:
        token = params.page_token or "0"
        if not token.isdigit():
            raise InvalidParamsError(
                message=f"page_token: {params.page_token!r} is not one this server gave"
            )
        start = int(token)
        size = params.page_size or DEFAULT_PAGE
        with self.threads.reading() as workflow:
            summaries = sorted(
                (workflow.summary(thread) for thread in workflow.threads()),
                key=lambda row: row.updated_at or "",
                reverse=True,
            )
        matching = [
            row
            for row in summaries
            if (not params.context_id or row.outcome.task_id == params.context_id)
            and (not params.status or TaskState.Value(row.outcome.state.value) == params.status)
        ]
        page = matching[start : start + size]
        tasks = [
            task
            for row in page
            for task in [self.read(row.thread_id, artifacts=params.include_artifacts)]
            if task is not None
        ]
        after = start + size
        return ListTasksResponse(
            tasks=tasks,
            next_page_token=str(after) if after < len(matching) else "",
            page_size=size,
            total_size=len(matching),
        )

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Refused: a task is its thread, and the thread is the audit."""
        raise UnsupportedOperationError(
            message=f"task {task_id!r} is a thread; threads are kept as the audit"
        )


async def _answered(read: Callable[[T], R], argument: T) -> R:
    """``read(argument)`` in a worker thread; the project's errors as A2A's (masked)."""
    try:
        return await asyncio.to_thread(read, argument)
    except A2AError:
        raise
    except Exception as error:
        raise a2a_error(error) from error
