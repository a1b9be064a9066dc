"""The audit log beside each thread, in the same database as its checkpoints.

It lives outside the checkpoint so that it can hold attempts that failed or were killed
(they never reach a checkpoint), so that checkpoints stay small however long a run is, and
so that a node re-run after a crash can reuse the result its finished attempt recorded.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from app.checkpointing import UnsupportedDatabaseUrl, sqlite_path
from app.postgres import DEFAULT_TIMEOUT, SchemaPool, is_postgres_url
from contracts import NodeError, NodeRun

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

POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS handoff_node_runs (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 1),
    node_id TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    result TEXT,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, seq)
)
"""


@dataclass
class _Entry:
    run: NodeRun
    result: str | None = None


class MemoryRunLedger:
    """For ``memory://`` runs and tests: kept for the life of the process only."""

    def __init__(self) -> None:
        self._entries: dict[str, list[_Entry]] = {}
        self._lock = threading.Lock()

    def start(self, thread_id: str, run: NodeRun) -> int:
        """Record an attempt that is starting; returns its sequence number."""
        with self._lock:
            entries = self._entries.setdefault(thread_id, [])
            entries.append(_Entry(NodeRun.model_validate(run)))
            return len(entries)

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Replace the attempt's record with its final state (and result, if it succeeded)."""
        with self._lock:
            self._entries[thread_id][seq - 1] = _Entry(NodeRun.model_validate(run), result)

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first."""
        with self._lock:
            return [entry.run for entry in self._entries.get(thread_id, [])]

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of a succeeded attempt with this input, if any."""
        with self._lock:
            for entry in reversed(self._entries.get(thread_id, [])):
                run = entry.run
                if (
                    run.node_id == node_id
                    and run.input_hash == input_hash
                    and run.status == "succeeded"
                    and entry.result is not None
                ):
                    return entry.result
        return None

    def abandon_running(self, thread_id: str, detail: str) -> int:
        """Mark attempts left 'running' by a process that died as failed; returns how many."""
        with self._lock:
            count = 0
            for entry in self._entries.get(thread_id, []):
                if entry.run.status == "running":
                    entry.run = _abandoned(entry.run, detail)
                    count += 1
            return count

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

    def setup(self) -> None:
        """Create the table now (it is otherwise created on first use)."""
        with self._lock:
            self._connection()

    def start(self, thread_id: str, run: NodeRun) -> int:
        """Record an attempt that is starting, durably; returns its sequence number."""
        record = NodeRun.model_validate(run)
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                (seq,) = conn.execute(
                    "SELECT coalesce(max(seq), 0) + 1 FROM handoff_node_runs WHERE thread_id = ?",
                    (thread_id,),
                ).fetchone()
                conn.execute(
                    "INSERT INTO handoff_node_runs "
                    "(thread_id, seq, node_id, input_hash, status, record) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        thread_id,
                        seq,
                        record.node_id,
                        record.input_hash,
                        record.status,
                        record.model_dump_json(),
                    ),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return int(seq)

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Store the attempt's final record (and result) in one committed statement."""
        record = NodeRun.model_validate(run)
        with self._lock:
            cursor = self._connection().execute(
                "UPDATE handoff_node_runs SET status = ?, record = ?, result = ? "
                "WHERE thread_id = ? AND seq = ?",
                (record.status, record.model_dump_json(), result, thread_id, seq),
            )
        if cursor.rowcount != 1:
            raise LookupError(f"no ledger entry {seq} for thread {thread_id!r}")

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

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of the latest succeeded attempt with this input, if any."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT result FROM handoff_node_runs WHERE thread_id = ? AND node_id = ? "
                    "AND input_hash = ? AND status = 'succeeded' AND result IS NOT NULL "
                    "ORDER BY seq DESC LIMIT 1",
                    (thread_id, node_id, input_hash),
                )
                .fetchone()
            )
        return None if row is None else str(row[0])

    def abandon_running(self, thread_id: str, detail: str) -> int:
        """Mark attempts left 'running' by a process that died as failed; returns how many."""
        with self._lock:
            conn = self._connection()
            rows = conn.execute(
                "SELECT seq, record FROM handoff_node_runs "
                "WHERE thread_id = ? AND status = 'running'",
                (thread_id,),
            ).fetchall()
            for seq, record in rows:
                run = _abandoned(NodeRun.model_validate_json(record), detail)
                conn.execute(
                    "UPDATE handoff_node_runs SET status = ?, record = ? "
                    "WHERE thread_id = ? AND seq = ?",
                    (run.status, run.model_dump_json(), thread_id, seq),
                )
        return len(rows)

    def close(self) -> None:
        """Close the connection (it reopens on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _abandoned(run: NodeRun, detail: str) -> NodeRun:
    return run.model_copy(
        update={"status": "failed", "error": NodeError(kind="transient", detail=detail)}
    )


class PostgresRunLedger:
    """The ``handoff_node_runs`` table in the PostgreSQL schema that holds the checkpoints.

    Give it the Workflow's pool (``pool=``) to share connections, or a ``url`` to have it
    open (and close) a pool of its own on first use. Every statement commits on its own;
    sequence numbers are taken with ``max(seq) + 1`` and a retry on the rare collision.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: Any | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._db = SchemaPool(
            POSTGRES_SCHEMA, url, pool=pool, timeout=timeout, owner="PostgresRunLedger"
        )
        self._connection = self._db.connection

    def setup(self) -> None:
        """Create the table if it does not exist (idempotent, safe across processes)."""
        self._db.setup()

    def start(self, thread_id: str, run: NodeRun) -> int:
        """Record an attempt that is starting, durably; returns its sequence number."""
        from psycopg.errors import UniqueViolation

        record = NodeRun.model_validate(run)
        with self._connection() as conn:
            for _ in range(20):
                try:
                    row = conn.execute(
                        "INSERT INTO handoff_node_runs "
                        "(thread_id, seq, node_id, input_hash, status, record) "
                        "SELECT %s, coalesce(max(seq), 0) + 1, %s, %s, %s, %s "
                        "FROM handoff_node_runs WHERE thread_id = %s RETURNING seq",
                        (
                            thread_id,
                            record.node_id,
                            record.input_hash,
                            record.status,
                            record.model_dump_json(),
                            thread_id,
                        ),
                    ).fetchone()
                except UniqueViolation:
                    continue  # another process took that number between our read and write
                assert row is not None
                return int(row["seq"])
        raise RuntimeError(f"could not record an attempt for thread {thread_id!r}")

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Store the attempt's final record (and result) in one committed statement."""
        record = NodeRun.model_validate(run)
        with self._connection() as conn:
            cursor = conn.execute(
                "UPDATE handoff_node_runs SET status = %s, record = %s, result = %s "
                "WHERE thread_id = %s AND seq = %s",
                (record.status, record.model_dump_json(), result, thread_id, seq),
            )
        if cursor.rowcount != 1:
            raise LookupError(f"no ledger entry {seq} for thread {thread_id!r}")

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first, each re-validated."""
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT record FROM handoff_node_runs WHERE thread_id = %s ORDER BY seq",
                (thread_id,),
            ).fetchall()
        return [NodeRun.model_validate_json(row["record"]) for row in rows]

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of the latest succeeded attempt with this input, if any."""
        with self._connection() as conn:
            row = conn.execute(
                "SELECT result FROM handoff_node_runs WHERE thread_id = %s AND node_id = %s "
                "AND input_hash = %s AND status = 'succeeded' AND result IS NOT NULL "
                "ORDER BY seq DESC LIMIT 1",
                (thread_id, node_id, input_hash),
            ).fetchone()
        return None if row is None else str(row["result"])

    def abandon_running(self, thread_id: str, detail: str) -> int:
        """Mark attempts left 'running' by a process that died as failed; returns how many."""
        with self._connection() as conn, conn.transaction():
            rows = conn.execute(
                "SELECT seq, record FROM handoff_node_runs "
                "WHERE thread_id = %s AND status = 'running' FOR UPDATE",
                (thread_id,),
            ).fetchall()
            for row in rows:
                run = _abandoned(NodeRun.model_validate_json(row["record"]), detail)
                conn.execute(
                    "UPDATE handoff_node_runs SET status = %s, record = %s "
                    "WHERE thread_id = %s AND seq = %s",
                    (run.status, run.model_dump_json(), thread_id, row["seq"]),
                )
        return len(rows)

    def close(self) -> None:
        """Close the pool this ledger opened itself (a shared pool belongs to its owner)."""
        self._db.close()


RunLedgerBackend = MemoryRunLedger | SqliteRunLedger | PostgresRunLedger


def ledger_for_url(url: str) -> RunLedgerBackend:
    """The ledger that lives beside the checkpoints at ``url``; opens nothing yet."""
    scheme = urlparse(url).scheme
    if scheme == "memory":
        return MemoryRunLedger()
    if scheme == "sqlite":
        return SqliteRunLedger(sqlite_path(url))
    if is_postgres_url(url):
        return PostgresRunLedger(url)
    raise UnsupportedDatabaseUrl(
        f"no run ledger for database URL scheme {scheme!r}; expected sqlite:///path, "
        "postgresql://... or memory://"
    )
