"""Which threads have a node running in this process, so a lock is let go only after it stops.

The dev server runs a node's synchronous body in a worker thread. Cancelling the run (or a
new run with ``multitask_strategy="interrupt"``) cancels the asyncio task that awaits it,
not the thread: the node goes on, writes its ledger row and artifacts, and returns into
nothing. If the thread's lock were released as the task ends, ``handoff resume`` (or the
superseding run) could start a second attempt of the same node beside it. The node runner
holds ``RunningNodes.running(thread_id)`` for a node's whole visit; the server waits on
``idle`` before it releases the lock, and before a new run of the thread takes it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


class RunningNodes:
    """A count of running node visits per thread id, with a wait for it to reach zero."""

    def __init__(self) -> None:
        self._count: Counter[str] = Counter()
        self._releasing: Counter[str] = Counter()
        self._changed = threading.Condition()

    @contextmanager
    def _counted(self, counts: Counter[str], thread_id: str) -> Iterator[None]:
        with self._changed:
            counts[thread_id] += 1
        try:
            yield
        finally:
            with self._changed:
                counts[thread_id] -= 1
                if counts[thread_id] <= 0:
                    del counts[thread_id]
                self._changed.notify_all()

    def running(self, thread_id: str) -> AbstractContextManager[None]:
        """Counted while the block runs, however it ends."""
        return self._counted(self._count, thread_id)

    def releasing(self, thread_id: str) -> AbstractContextManager[None]:
        """Counted while this process is about to let go of the thread's lock.

        A run that finds the lock taken waits (``will_release``) instead of failing as busy
        when the holder is a run of this same process that is only waiting for its node.
        """
        return self._counted(self._releasing, thread_id)

    def will_release(self, thread_id: str) -> bool:
        """Whether a run of this process is about to let go of the thread's lock."""
        with self._changed:
            return self._releasing[thread_id] > 0

    def busy(self, thread_id: str) -> bool:
        """Whether a node of the thread is running in this process now."""
        with self._changed:
            return self._count[thread_id] > 0

    def idle(self, thread_id: str, timeout: float | None = None) -> bool:
        """Wait until no node of the thread runs here; False if ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while self._count[thread_id] > 0:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
            return True


RUNNING_NODES = RunningNodes()
"""The process's one registry: every served run's nodes count here."""
