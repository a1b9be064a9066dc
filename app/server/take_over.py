"""A served run's hold on its thread: the lock the CLI takes, taken over from a cancelled run.

A cancelled run of this process keeps its thread's lock while its node finishes (a node's
body cannot be stopped); the run that supersedes it waits for that, and for nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from contextlib import ExitStack
from functools import cache

from app.errors import ThreadBusy
from app.server.running_nodes import RUNNING_NODES
from app.settings import Settings
from app.storage.backends import backend_for
from app.storage.locks import ThreadLock

DRAIN_SECONDS = 30.0
"""How long a run waits for a node of the same thread, running in this process, whose run has
not yet begun to let go of the thread. Once that run lets go (it was cancelled or
superseded), the new run waits for as long as the node runs: the wait ends when it returns."""
TAKE_OVER_POLL_SECONDS = 0.05


@cache
def server_lock() -> ThreadLock:
    """The one-writer-per-thread lock the CLI and the Python API take, for this server."""
    settings = Settings()
    url = settings.resolved_database_url()
    return backend_for(url).lock(url, settings)


async def take_over(thread_id: str) -> ExitStack:
    """The thread's lock, once a cancelled run of this process has let go of it.

    Such a run keeps the lock while its node finishes (``release_when_idle``); the run that
    supersedes it waits for that as long as the node runs, since the thread cannot move on
    before. Any other holder means busy at once. The wait is cancellable: a run cancelled
    while it waits never takes the lock afterwards (each attempt is one non-blocking try,
    and a try that won after the cancel gives the lock back).
    """
    deadline = time.monotonic() + DRAIN_SECONDS

    def own_run_holds() -> bool:
        return RUNNING_NODES.will_release(thread_id) or (
            RUNNING_NODES.busy(thread_id) and time.monotonic() < deadline
        )

    while True:
        # Judged before the try as well as after: the holder may let go while the try
        # runs, and the try then failed on a lock that was ours to wait for.
        expected = own_run_holds()
        attempt = asyncio.ensure_future(asyncio.to_thread(hold_now, thread_id))
        try:
            return await asyncio.shield(attempt)
        except ThreadBusy:
            if not (expected or own_run_holds()):
                raise
        except asyncio.CancelledError:
            with contextlib.suppress(ThreadBusy):
                (await attempt).close()
            raise
        await asyncio.sleep(TAKE_OVER_POLL_SECONDS)


def hold_now(thread_id: str) -> ExitStack:
    """The lock held in a stack the caller closes, or ThreadBusy at once."""
    held = ExitStack()
    held.enter_context(server_lock().hold(thread_id))
    return held


def release_when_idle(thread_id: str, held: ExitStack) -> None:
    """Let go of the thread once no node of it runs in this process (a cancelled one too)."""
    RUNNING_NODES.idle(thread_id)
    held.close()
