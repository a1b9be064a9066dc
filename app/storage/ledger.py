"""The audit log beside each thread, in the same database as its checkpoints.

It lives outside the checkpoint so that it can hold attempts that failed or were killed
(they never reach a checkpoint), so that checkpoints stay small however long a run is, and
so that a node re-run after a crash can reuse the result its finished attempt recorded.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from app.storage import sqlite_files
from app.storage.postgres import PostgresTables
from contracts import NodeError, NodeRun, Usage
from graphs.budget import Tally, tally_of

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

    def latest_result(self, thread_id: str, node_id: str) -> str | None:
        """The stored update of the node's latest succeeded attempt, whatever its input."""
        with self._lock:
            for entry in reversed(self._entries.get(thread_id, [])):
                run = entry.run
                if run.node_id == node_id and run.status == "succeeded" and entry.result:
                    return entry.result
        return None

    def tally(
        self, thread_id: str, node_id: str, input_hash: str, fanned: Sequence[str] = ()
    ) -> Tally:
        """The thread's records summed for a visit of ``node_id`` on ``input_hash``."""
        return tally_of(self.runs(thread_id), node_id, input_hash, fanned)

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


class _Cursor(Protocol):
    """What the shared SQL needs of a cursor: sqlite3's and psycopg's (with tuple rows)."""

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed."""
        ...

    def execute(self, query: str, params: Sequence[Any], /) -> Any:
        """Run one statement."""
        ...

    def fetchone(self) -> Any:
        """The next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """Every remaining row."""
        ...


class SqlRunLedger(ABC):
    """The ``handoff_node_runs`` table, whichever SQL database holds it.

    The statements are shared and written with ``?`` placeholders; a database supplies its
    placeholder style, how a statement (or a transaction) gets a cursor, and how an attempt
    gets the next sequence number without two processes taking the same one.
    """

    placeholder: ClassVar[str] = "?"
    row_lock: ClassVar[str] = ""
    """Appended to the SELECT of rows a transaction is about to update."""
    spent_sql: ClassVar[str]
    """A row's ``{usage}`` (tool_calls or tokens) read from its JSON record; 0 when the
    attempt was reused (it did no work)."""

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self.placeholder)

    @abstractmethod
    def _cursor(self, *, fsync: bool = True) -> AbstractContextManager[_Cursor]:
        """A cursor whose every statement commits on its own.

        ``fsync=False``: the commit may wait for the next fsynced one of the database, for
        a row something durable is about to follow (a database that cannot tell the
        difference commits durably).
        """

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[_Cursor]:
        """A cursor whose statements commit together when the block ends (or not at all)."""

    @abstractmethod
    def _insert_next(self, statement: str, params: Sequence[Any]) -> int:
        """Run the INSERT that takes ``max(seq) + 1`` so no two attempts share a number."""

    def setup(self) -> None:
        """Create the table now (it is otherwise created on first use)."""
        with self._cursor():
            pass

    def start(self, thread_id: str, run: NodeRun) -> int:
        """Record an attempt that is starting, durably; returns its sequence number."""
        record = NodeRun.model_validate(run)
        return self._insert_next(
            self._sql(
                "INSERT INTO handoff_node_runs "
                "(thread_id, seq, node_id, input_hash, status, record) "
                "SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ?, ? "
                "FROM handoff_node_runs WHERE thread_id = ? RETURNING seq"
            ),
            (
                thread_id,
                record.node_id,
                record.input_hash,
                record.status,
                record.model_dump_json(),
                thread_id,
            ),
        )

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Store the attempt's final record (and result) in one committed statement."""
        record = NodeRun.model_validate(run)
        # A succeeded attempt's checkpoint is committed (fsynced) right after it.
        with self._cursor(fsync=record.status != "succeeded") as cursor:
            cursor.execute(
                self._sql(
                    "UPDATE handoff_node_runs SET status = ?, record = ?, result = ? "
                    "WHERE thread_id = ? AND seq = ?"
                ),
                (record.status, record.model_dump_json(), result, thread_id, seq),
            )
            changed = cursor.rowcount
        if changed != 1:
            raise LookupError(f"no ledger entry {seq} for thread {thread_id!r}")

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first, each re-validated."""
        with self._cursor() as cursor:
            rows = cursor.execute(
                self._sql("SELECT record FROM handoff_node_runs WHERE thread_id = ? ORDER BY seq"),
                (thread_id,),
            ).fetchall()
        return [NodeRun.model_validate_json(row[0]) for row in rows]

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of the latest succeeded attempt with this input, if any."""
        with self._cursor() as cursor:
            row = cursor.execute(
                self._sql(
                    "SELECT result FROM handoff_node_runs WHERE thread_id = ? AND node_id = ? "
                    "AND input_hash = ? AND status = 'succeeded' AND result IS NOT NULL "
                    "ORDER BY seq DESC LIMIT 1"
                ),
                (thread_id, node_id, input_hash),
            ).fetchone()
        return None if row is None else str(row[0])

    def latest_result(self, thread_id: str, node_id: str) -> str | None:
        """The stored update of the node's latest succeeded attempt, whatever its input."""
        with self._cursor() as cursor:
            row = cursor.execute(
                self._sql(
                    "SELECT result FROM handoff_node_runs WHERE thread_id = ? AND node_id = ? "
                    "AND status = 'succeeded' AND result IS NOT NULL ORDER BY seq DESC LIMIT 1"
                ),
                (thread_id, node_id),
            ).fetchone()
        return None if row is None else str(row[0])

    def tally(
        self, thread_id: str, node_id: str, input_hash: str, fanned: Sequence[str] = ()
    ) -> Tally:
        """The thread's records summed for a visit by the database, in one query.

        ``edge`` is the last row of a node outside the fan-out (``fanned``; none: the last
        row), where a branch task's share of the budget is judged (``graphs.budget``).
        """
        outside = f"node_id NOT IN ({', '.join('?' for _ in fanned)})" if fanned else "1 = 1"
        calls = self.spent_sql.format(usage="tool_calls")
        tokens = self.spent_sql.format(usage="tokens")
        statement = (
            "WITH edge AS (SELECT coalesce(max(seq), 0) AS seq FROM handoff_node_runs "
            f"WHERE thread_id = ? AND {outside}), "
            "spend AS (SELECT seq, (node_id = ? AND input_hash = ?) AS mine, "
            f"{calls} AS calls, {tokens} AS tokens "
            "FROM handoff_node_runs WHERE thread_id = ?) "
            "SELECT count(CASE WHEN mine THEN 1 END), sum(calls), sum(tokens), "
            "sum(CASE WHEN spend.seq <= edge.seq THEN calls END), "
            "sum(CASE WHEN spend.seq <= edge.seq THEN tokens END), "
            "sum(CASE WHEN mine AND spend.seq > edge.seq THEN calls END), "
            "sum(CASE WHEN mine AND spend.seq > edge.seq THEN tokens END) "
            "FROM spend CROSS JOIN edge"
        )
        params = (thread_id, *fanned, node_id, input_hash, thread_id)
        with self._cursor() as cursor:
            row = cursor.execute(self._sql(statement), params).fetchone()
        attempts, calls_all, tokens_all, calls_before, tokens_before, calls_own, tokens_own = (
            int(value or 0) for value in row
        )
        return Tally(
            spent=Usage(tool_calls=calls_all, tokens=tokens_all),
            attempts=attempts,
            before_fan_out=Usage(tool_calls=calls_before, tokens=tokens_before),
            own_since=Usage(tool_calls=calls_own, tokens=tokens_own),
        )

    def abandon_running(self, thread_id: str, detail: str) -> int:
        """Mark attempts left 'running' by a process that died as failed; returns how many."""
        with self._transaction() as cursor:
            rows = cursor.execute(
                self._sql(
                    "SELECT seq, record FROM handoff_node_runs "
                    "WHERE thread_id = ? AND status = 'running'" + self.row_lock
                ),
                (thread_id,),
            ).fetchall()
            for seq, record in rows:
                run = _abandoned(NodeRun.model_validate_json(record), detail)
                cursor.execute(
                    self._sql(
                        "UPDATE handoff_node_runs SET status = ?, record = ? "
                        "WHERE thread_id = ? AND seq = ?"
                    ),
                    (run.status, run.model_dump_json(), thread_id, seq),
                )
        return len(rows)

    @abstractmethod
    def close(self) -> None:
        """Release the connection(s) this ledger opened."""


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
            self._conn = conn
        return self._conn

    @contextmanager
    def _cursor(self, *, fsync: bool = True) -> Iterator[_Cursor]:
        with self._lock:
            yield self._synced(self._connection(), "FULL" if fsync else "NORMAL").cursor()

    def _synced(self, conn: sqlite3.Connection, level: str) -> sqlite3.Connection:
        """The connection with its next commits fsynced (FULL) or not (NORMAL)."""
        self._synchronous = sqlite_files.synchronous(conn, level, self._synchronous)
        return conn

    @contextmanager
    def _transaction(self, *, synchronous: str = "FULL") -> Iterator[_Cursor]:
        with self._lock:
            conn = self._synced(self._connection(), synchronous)
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn.cursor()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite ends it itself on some errors (SQLITE_FULL)
                    conn.execute("ROLLBACK")
                raise

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


def _abandoned(run: NodeRun, detail: str) -> NodeRun:
    return run.model_copy(
        update={"status": "failed", "error": NodeError(kind="transient", detail=detail)}
    )


class PostgresRunLedger(PostgresTables, SqlRunLedger):
    """The ``handoff_node_runs`` table in the PostgreSQL schema that holds the checkpoints.

    Give it the Workflow's pool (``pool=``) to share connections, or a ``url`` to have it
    open (and close) a pool of its own on first use. Statements commit on their own;
    sequence numbers are taken with ``max(seq) + 1`` and a retry on the rare collision.
    """

    schema_sql = POSTGRES_SCHEMA
    placeholder = "%s"
    row_lock = " FOR UPDATE"
    spent_sql = (
        "CASE WHEN (record::jsonb ->> 'reused')::boolean THEN 0 "
        "ELSE coalesce((record::jsonb #>> '{{usage,{usage}}}')::bigint, 0) END"
    )

    @contextmanager
    def _cursor(self, *, fsync: bool = True) -> Iterator[_Cursor]:
        from psycopg.rows import tuple_row

        with self._db.connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            yield cursor

    @contextmanager
    def _transaction(self) -> Iterator[_Cursor]:
        from psycopg.rows import tuple_row

        with (
            self._db.connection() as conn,
            conn.transaction(),
            conn.cursor(row_factory=tuple_row) as cursor,
        ):
            yield cursor

    def _insert_next(self, statement: str, params: Sequence[Any]) -> int:
        from psycopg.errors import UniqueViolation

        for _ in range(20):
            try:
                with self._cursor() as cursor:
                    row = cursor.execute(statement, params).fetchone()
            except UniqueViolation:
                continue  # another process took that number between our read and write
            assert row is not None
            return int(row[0])
        raise RuntimeError(f"could not record an attempt for thread {params[0]!r}")


RunLedgerBackend = MemoryRunLedger | SqliteRunLedger | PostgresRunLedger
