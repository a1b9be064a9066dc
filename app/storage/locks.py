"""One writer per thread: a lock each Workflow holds for the whole of a run or resume.

``with lock.hold(thread_id):`` either holds the thread until the block ends or raises
:class:`~app.errors.ThreadBusy` at once, having changed nothing. A holder that dies (even
by SIGKILL) releases the lock with its process or database session, so a crash never
blocks a thread. LangGraph itself would let two writers fork a thread's checkpoint chain
(langgraph#8796); the Workflow checks the thread's state only after the lock is held.

* PostgreSQL: a session-level ``pg_try_advisory_lock`` on a dedicated connection. The
  server releases it when that session ends. Every checkpoint write of the thread goes
  through the same connection (``writer()``), so a holder whose session was ended can no
  longer add a checkpoint: there is no window in which two processes both extend the
  chain. (Audit records and artifact puts use the shared pool; a late put of the same
  content by such a holder returns the existing revision.)
* SQLite: ``flock`` on a per-thread file beside the database (``<db>-locks/<id>.lock``).
  The kernel releases it when the holding process dies, immediately, so the kill matrix
  can resume right after a SIGKILL. A lease row with an expiry in the database file was
  considered and rejected: a SIGKILLed holder would block the thread until the lease
  expires, a holder paused longer than the expiry (GC, SIGSTOP, a suspended laptop) would
  lose the lease while still writing, and a heartbeat thread would be needed to renew it.
  ``fcntl`` byte-range locks inside the database file itself are not usable either: the
  process loses them whenever SQLite closes any descriptor of that file. An SQLite
  database is on one machine, so a local ``flock`` covers every process that can open it.
* ``memory://``: a per-process set (such a database is not shared between processes).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver

from app.errors import ThreadBusy
from app.storage.postgres import DEFAULT_TIMEOUT, advisory_key, connect, current_schema

if TYPE_CHECKING:
    from app.storage.postgres import PgConnection

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _busy(thread_id: str, holder: str | None) -> ThreadBusy:
    who = f" ({holder})" if holder else ""
    return ThreadBusy(
        f"thread {thread_id!r} is busy: another process{who} is running or resuming it; "
        "nothing was changed. Try again when it has finished (see `handoff status "
        f"{thread_id}`)"
    )


class ThreadLock(Protocol):
    """Exclusive, crash-safe ownership of a thread for the duration of a run."""

    def hold(self, thread_id: str) -> contextlib.AbstractContextManager[None]:
        """Hold the thread until the block ends, or raise ThreadBusy at once."""
        ...

    def holding(self, thread_id: str) -> bool:
        """True while this lock object holds the thread and the hold is still valid."""
        ...

    def writer(self, thread_id: str) -> BaseCheckpointSaver[str] | None:
        """The saver the held thread's checkpoint writes must go through, if any."""
        ...

    def close(self) -> None:
        """Release whatever the lock keeps open."""
        ...


class _HeldHere:
    """Holds kept in this process's own set, which only ends with it; writes go the usual way."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._mutex = threading.Lock()

    def holding(self, thread_id: str) -> bool:
        """True while held (a hold kept in this process cannot be lost while it lives)."""
        with self._mutex:
            return thread_id in self._held

    def writer(self, thread_id: str) -> BaseCheckpointSaver[str] | None:
        """Writes go through the shared saver."""
        return None


class MemoryThreadLock(_HeldHere):
    """For ``memory://`` databases, which live and die with one process."""

    @contextlib.contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        """Hold the thread in this process."""
        with self._mutex:
            if thread_id in self._held:
                raise _busy(thread_id, "in this process")
            self._held.add(thread_id)
        try:
            yield
        finally:
            with self._mutex:
                self._held.discard(thread_id)

    def close(self) -> None:
        """Nothing to release."""


class FileThreadLock(_HeldHere):
    """``flock`` on ``<directory>/<thread_id>.lock``; see the module docstring for why.

    The file is removed when the hold ends. A process that opened it just before that and
    locks the removed file notices (the path no longer names the inode it locked) and
    starts over, so two holders can never hold two different files for one thread.
    """

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = Path(directory)

    @classmethod
    def beside(cls, database: Path) -> FileThreadLock:
        """The lock folder of an SQLite database file: ``<file>-locks``."""
        return cls(database.with_name(f"{database.name}-locks"))

    def _acquire(self, thread_id: str) -> tuple[int, Path]:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{thread_id}.lock"
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise _busy(thread_id, holder) from None
            try:
                current = os.stat(path, follow_symlinks=False)
                opened = os.fstat(fd)
                if (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino):
                    return fd, path
            except FileNotFoundError:
                pass
            os.close(fd)  # we locked a file its last holder had already removed: retry

    @contextlib.contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        """Hold the thread across every process on this machine."""
        fd, path = self._acquire(thread_id)
        try:
            record = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "since": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            with self._mutex:
                self._held.add(thread_id)
            yield
        finally:
            with self._mutex:
                self._held.discard(thread_id)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # still holding the flock, so nobody else holds this file
            os.close(fd)  # releases the flock

    def close(self) -> None:
        """Holds are released by their blocks; nothing else is open."""


def _read_holder(fd: int) -> str | None:
    try:
        record = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {record['pid']} on {record['host']} since {record['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return None


class PostgresThreadLock:
    """``pg_try_advisory_lock`` on a connection opened for the hold and closed after it.

    The key is a 64-bit hash of the schema and the thread id, so deployments (and tests)
    that share a database in different schemas never block each other. ``writer()`` is a
    PostgresSaver on the same connection: see the module docstring.

    A holder that exits or is killed closes its socket, and the server ends the session
    (and the lock) at once. A holder whose machine or network vanishes sends nothing more;
    the session's server-side TCP keepalives and user timeout, set from ``timeout`` when the
    lock is taken, make the server notice within about ``2 * timeout`` seconds instead of
    the operating system's default of over two hours.
    """

    def __init__(
        self, url: str, *, timeout: float = DEFAULT_TIMEOUT, serde: Any | None = None
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.serde = serde
        self._holds: dict[str, tuple[PgConnection, BaseCheckpointSaver[str]]] = {}
        self._mutex = threading.Lock()

    @contextlib.contextmanager
    def hold(self, thread_id: str) -> Iterator[None]:
        """Hold the thread across every process that uses this database and schema."""
        from langgraph.checkpoint.postgres import PostgresSaver

        conn = connect(self.url, self.timeout)
        try:
            _bound_server_side_detection(conn, self.timeout)
            key = advisory_key("handoff-thread", current_schema(conn), thread_id)
            row = conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (key,)).fetchone()
            if not row or not row["got"]:
                raise _busy(thread_id, _pg_holder(conn, key))
            with self._mutex:
                self._holds[thread_id] = (conn, PostgresSaver(conn, serde=self.serde))
            try:
                yield
            finally:
                with self._mutex:
                    self._holds.pop(thread_id, None)
                # Released before returning: closing the session releases it too, but
                # the server does that after the client has moved on, so a caller that
                # took the thread again at once could find it still held.
                with contextlib.suppress(Exception):  # a lost session holds nothing
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            conn.close()  # ends the session (which releases the lock if the unlock failed)

    def holding(self, thread_id: str) -> bool:
        """True while held and the session that holds the lock is still alive."""
        with self._mutex:
            held = self._holds.get(thread_id)
        if held is None:
            return False
        try:
            held[0].execute("SELECT 1")
        except Exception:  # any failure means the session, and the lock, may be gone
            return False
        return True

    def writer(self, thread_id: str) -> BaseCheckpointSaver[str] | None:
        """A saver on the lock's own connection while the thread is held."""
        with self._mutex:
            held = self._holds.get(thread_id)
        return held[1] if held else None

    def close(self) -> None:
        """Holds are released by their blocks; nothing else is open."""


def _bound_server_side_detection(conn: PgConnection, timeout: float) -> None:
    """Have the server probe this session's client, so a vanished holder is let go."""
    seconds = max(2, math.ceil(timeout))
    conn.execute(
        "SELECT set_config('tcp_keepalives_idle', %s, false), "
        "set_config('tcp_keepalives_interval', %s, false), "
        "set_config('tcp_keepalives_count', '3', false), "
        "set_config('tcp_user_timeout', %s, false)",
        (str(max(1, seconds // 2)), str(max(1, seconds // 4)), str(seconds * 1000)),
    )


def _pg_holder(conn: PgConnection, key: int) -> str | None:
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    with contextlib.suppress(Exception):
        row = conn.execute(
            "SELECT a.application_name, a.client_addr, a.backend_start FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.granted AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid "
            "AND l.objsubid = 1 AND l.database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1",
            (unsigned >> 32, unsigned & 0xFFFFFFFF),
        ).fetchone()
        if row:
            name = row["application_name"] or "a session"
            since = row["backend_start"].isoformat(timespec="seconds")
            return f"{name} from {row['client_addr'] or 'local socket'} since {since}"
    return None
