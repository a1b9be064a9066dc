"""The audit log beside each thread, in the same database as its checkpoints.

It lives outside the checkpoint so that it can hold attempts that failed or were killed
(they never reach a checkpoint) and so that checkpoints stay small however long a run is.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from urllib.parse import urlparse

from app.checkpointing import UnsupportedDatabaseUrl, sqlite_path
from contracts import NodeRun

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_node_runs (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
)
"""


class MemoryRunLedger:
    """For ``memory://`` runs and tests: kept for the life of the process only."""

    def __init__(self) -> None:
        self._runs: dict[str, list[NodeRun]] = {}
        self._lock = threading.Lock()

    def record(self, thread_id: str, run: NodeRun) -> None:
        """Append one attempt's record."""
        with self._lock:
            self._runs.setdefault(thread_id, []).append(NodeRun.model_validate(run))

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first."""
        with self._lock:
            return list(self._runs.get(thread_id, []))

    def close(self) -> None:
        """Nothing to release."""


class SqliteRunLedger:
    """A table in the thread's SQLite file; the connection opens on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path), check_same_thread=False, timeout=30, isolation_level=None
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(SQLITE_SCHEMA)
            self._conn = conn
        return self._conn

    def record(self, thread_id: str, run: NodeRun) -> None:
        """Append one attempt's record, durably, before the node returns."""
        record = NodeRun.model_validate(run)
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO handoff_node_runs (thread_id, seq, node_id, status, record) "
                    "SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ? FROM handoff_node_runs "
                    "WHERE thread_id = ?",
                    (thread_id, record.node_id, record.status, record.model_dump_json(), thread_id),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first, each re-validated."""
        with self._lock:
            rows = (
                self._connection()
                .execute(
                    "SELECT record FROM handoff_node_runs WHERE thread_id = ? ORDER BY seq",
                    (thread_id,),
                )
                .fetchall()
            )
        return [NodeRun.model_validate_json(row[0]) for row in rows]

    def close(self) -> None:
        """Close the connection (it reopens on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


RunLedgerBackend = MemoryRunLedger | SqliteRunLedger


def ledger_for_url(url: str) -> RunLedgerBackend:
    """The ledger that lives beside the checkpoints at ``url``; opens nothing yet."""
    scheme = urlparse(url).scheme
    if scheme == "memory":
        return MemoryRunLedger()
    if scheme == "sqlite":
        return SqliteRunLedger(sqlite_path(url))
    raise UnsupportedDatabaseUrl(
        f"no run ledger for database URL scheme {scheme!r}; expected sqlite:///path or memory://"
    )
