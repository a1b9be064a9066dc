"""A worker's view of a lost database: wait with backoff, report once, give up at the limit."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from app.errors import (
    DatabaseUnavailable,
)
from app.storage.backends.postgres import unavailable
from app.storage.postgres import (
    describe_url,
    is_outage,
    redact,
)
from graphs.errors import HandoffError

if TYPE_CHECKING:
    import procrastinate


_T = TypeVar("_T")
log = logging.getLogger(__name__)


BACKOFF_FIRST = 0.25
BACKOFF_MAX = 5.0
"""Seconds between a waiting worker's attempts to reach a lost database: doubling, capped."""


def lost(error: BaseException | None) -> bool:
    """Whether ``error``, or an error it was raised from, means the database was lost.

    Procrastinate wraps psycopg's errors (``ConnectorException from OperationalError``),
    so the chain of causes is followed; the project's DatabaseUnavailable counts too.
    """
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, DatabaseUnavailable) or is_outage(error):
            return True
        seen.add(id(error))
        error = error.__cause__
    return False


@contextlib.contextmanager
def reachable(url: str) -> Iterator[None]:
    """Report a server that cannot be reached as DatabaseUnavailable (exit code 9)."""
    try:
        yield
    except HandoffError:
        raise
    except Exception as error:
        if not lost(error):
            raise
        raise unavailable(url, error) from error


def reason_of(error: BaseException, url: str) -> str:
    """The innermost cause of ``error`` on one line, password masked."""
    root = error
    while root.__cause__ is not None:
        root = root.__cause__
    text = redact(" ".join(str(root).split()), url)
    return f"{type(root).__name__}: {text}" if text else type(root).__name__


class WaitEnded(DatabaseUnavailable):
    """A worker stopped waiting for its lost database: told to stop, or past the limit.

    Raised by every query that was waiting; the worker ends with it (exit code 9), and the
    copies Procrastinate logs from its side tasks are left out (the last line says it).
    """


class OutageWatch:
    """A worker's view of its database: reachable, or lost since a moment (reported once).

    Every query of the worker's queue goes through :meth:`patiently`: a lost connection
    is a wait, not an error. The first failure of an outage logs one line; the query is
    retried with backoff (0.25 s, doubling up to 5 s) until it succeeds, the worker is
    told to stop, or ``limit`` seconds have passed since the outage began; then it raises
    DatabaseUnavailable, which ends the worker with exit code 9.
    """

    def __init__(self, url: str, limit: float) -> None:
        self.url = url
        self.limit = limit
        self.since: float | None = None
        self.recovered_at = -math.inf
        self.outages = 0
        self._stopping: asyncio.Event | None = None

    @property
    def stopping(self) -> asyncio.Event:
        """Set when the worker is told to stop: a waiting query gives up at once."""
        if self._stopping is None:
            self._stopping = asyncio.Event()
        return self._stopping

    def settled(self, grace: float) -> bool:
        """No outage now, and the last one ended at least ``grace`` seconds ago."""
        return self.since is None and time.monotonic() - self.recovered_at >= grace

    async def patiently(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """``call()``'s result, waiting out a lost database between attempts."""
        delay = BACKOFF_FIRST
        while True:
            try:
                result = await call()
            except Exception as error:
                if not lost(error):
                    raise
                await self.wait(error, delay)
                delay = min(2 * delay, BACKOFF_MAX)
                continue
            if self.since is not None:
                self.since, self.recovered_at = None, time.monotonic()
            return result

    async def wait(self, error: BaseException, delay: float) -> None:
        """Sleep ``delay`` before the next attempt; raise if stopping or past the limit."""
        now = time.monotonic()
        where = describe_url(self.url)
        reason = reason_of(error, self.url)
        if self.since is None:
            self.since = now
            self.outages += 1
            log.warning(
                "database unavailable at %s (%s); waiting for it, retrying with backoff for "
                "up to %gs (HANDOFF_WORKER_OUTAGE_SECONDS); jobs cut short are retried once "
                "it is back",
                where,
                reason,
                self.limit,
            )
        if self.stopping.is_set():
            raise WaitEnded(
                f"database unavailable at {where} ({reason}); the worker was told to stop "
                "while waiting for it"
            ) from error
        waited = now - self.since
        if waited >= self.limit:
            raise WaitEnded(
                f"database unavailable at {where} for {waited:.0f}s ({reason}); the worker "
                f"stopped waiting after HANDOFF_WORKER_OUTAGE_SECONDS={self.limit:g}"
            ) from error
        with contextlib.suppress(TimeoutError):  # the usual end of the sleep
            await asyncio.wait_for(self.stopping.wait(), min(delay, self.limit - waited))


@dataclass
class Watching:
    """The OutageWatch of the worker running on a connector; None outside a worker."""

    watch: OutageWatch | None = None


@functools.cache
def patient_connector_class() -> type[procrastinate.PsycopgConnector]:
    """Procrastinate's psycopg connector whose queries wait out an outage in a worker.

    Built on first use so that importing this module never imports Procrastinate. The
    watch is set only while a worker runs: submitting from a command fails at once.
    """
    import procrastinate

    class PatientConnector(procrastinate.PsycopgConnector):
        def __init__(self, *, watching: Watching, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.watching = watching

        async def _patiently(self, call: Callable[[], Awaitable[_T]]) -> _T:
            watch = self.watching.watch
            return await (call() if watch is None else watch.patiently(call))

        async def execute_query_async(self, query: Any, **arguments: Any) -> None:
            base = super().execute_query_async
            await self._patiently(lambda: base(query, **arguments))

        async def execute_query_one_async(self, query: Any, **arguments: Any) -> dict[str, Any]:
            base = super().execute_query_one_async
            return await self._patiently(lambda: base(query, **arguments))

        async def execute_query_all_async(
            self, query: Any, **arguments: Any
        ) -> list[dict[str, Any]]:
            base = super().execute_query_all_async
            return await self._patiently(lambda: base(query, **arguments))

        async def listen_notify(self, on_notification: Any, channels: Any) -> None:
            base = super().listen_notify  # returns only by raising: it listens until then
            await self._patiently(lambda: base(on_notification, channels))

    return PatientConnector
