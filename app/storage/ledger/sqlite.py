"""The audit ledger in a thread's SQLite file, beside its checkpoints."""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.storage import sqlite_files
from app.storage.ledger.base import Cursor, SqlRunLedger

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_node_runs (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    result TEXT,
    PRIMARY KEY (thread_id, seq)
)
"""
SQLITE_EFFECTS = """
CREATE TABLE IF NOT EXISTS handoff_tool_effects (
    thread_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    effect TEXT NOT NULL,
    PRIMARY KEY (thread_id, call_id)
)
"""


class SqliteRunLedger(SqlRunLedger):
    """A table in the thread's SQLite file; the connection opens on first use.

    One connection serves every thread of the process (guarded by a mutex); a new
    sequence number is taken inside ``BEGIN IMMEDIATE``, which locks out every other
    writer of the file until it commits, so no two processes can take the same one.

    An attempt's start row, and the finish row of one that succeeded, are committed
    without an fsync of their own (``synchronous`` NORMAL); a failed or paused attempt's
    finish row and every other write are fsynced (FULL). A killed process loses nothing by
    it: the commit is in the write-ahead log, which the OS holds. Against a power loss a
    row is durable as soon as any later commit of the file is, because the log is one file
    written in commit order and SQLite recovers a valid prefix of it: after a node
    succeeds LangGraph commits its writes and checkpoint (fsynced) to this same file
    before the next node starts. What a power loss can take is the last node's work since
    then, which a resume redoes; never a row without the rows before it.
    ``read_only`` ledgers (for inspection) open the file without setting anything up, so
    reading the audit needs no free space (see ``app.storage.sqlite_files``).

    A succeeded attempt's stored update is kept zlib-compressed, as a BLOB, when that is
    smaller: PostgreSQL compresses such text itself (TOAST), SQLite keeps it as given, and
    an update holds contracts whose field names and envelope items repeat. A sealed update
    (``keys``) is kept as sealed text, and one stored before as the text it was.
    """

    spent_sql = (
        "CASE WHEN json_extract(record, '$.reused') THEN 0 "
        "ELSE coalesce(json_extract(record, '$.usage.{usage}'), 0) END"
    )

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._synchronous = ""

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite_files.connect(
                self.path,
                read_only=self.read_only,
                needs=("handoff_node_runs",),
                isolation_level=None,
            )
            if not isinstance(conn, sqlite_files.ReadOnlyConnection):
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(SQLITE_SCHEMA)
                conn.execute(SQLITE_EFFECTS)
            self._conn = conn
        return self._conn

    @contextmanager
    def _cursor(self, *, fsync: bool = True) -> Iterator[Cursor]:
        with self._lock:
            yield self._synced(self._connection(), "FULL" if fsync else "NORMAL").cursor()

    def _synced(self, conn: sqlite3.Connection, level: str) -> sqlite3.Connection:
        """The connection with its next commits fsynced (FULL) or not (NORMAL)."""
        self._synchronous = sqlite_files.synchronous(conn, level, self._synchronous)
        return conn

    @contextmanager
    def _transaction(self, *, synchronous: str = "FULL") -> Iterator[Cursor]:
        with self._lock:
            with sqlite_files.immediate(self._synced(self._connection(), synchronous)) as conn:
                yield conn.cursor()

    def _stored_result(self, result: str | None) -> Any:
        """The update compressed, when not sealed and that is smaller (see the class doc)."""
        if result is None or self.keys is not None:
            return super()._stored_result(result)
        text = result.encode("utf-8")
        smaller = zlib.compress(text)
        return smaller if len(smaller) < len(text) else result

    def _opened(self, stored: Any) -> str | None:
        """A compressed update (a BLOB) decompressed; text as the base reads it."""
        if isinstance(stored, bytes):
            return zlib.decompress(stored).decode("utf-8")
        return super()._opened(stored)

    def _insert_next(self, statement: str, params: Sequence[Any]) -> int:
        with self._transaction(synchronous="NORMAL") as cursor:  # a start row: see above
            (seq,) = cursor.execute(statement, params).fetchall()[0]
        return int(seq)

    def close(self) -> None:
        """Close the connection (it reopens on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._synchronous = ""
