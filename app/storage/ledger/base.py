"""What every audit ledger stores, and the SQL the SQLite and PostgreSQL ledgers share.

The ledger is the audit log beside each thread, in the same database as its checkpoints
(see ``app.storage.ledger``). Each SQL database supplies only how it gets a cursor, its
placeholder style and how an attempt takes the next sequence number.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

from app.storage.encryption import KeyRing, open_text, seal_text
from contracts import NodeError, NodeRun, Usage
from graphs.budget import Tally


def abandoned(run: NodeRun, detail: str) -> NodeRun:
    """``run`` as failed: what an attempt left 'running' by a process that died becomes."""
    return run.model_copy(
        update={"status": "failed", "error": NodeError(kind="transient", detail=detail)}
    )


class Cursor(Protocol):
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
    """The ledger's tables, whichever SQL database holds them.

    ``handoff_node_runs`` holds the attempts, ``handoff_tool_effects`` the write calls that
    ran.

    The statements are shared and written with ``?`` placeholders; a database supplies its
    placeholder style, how a statement (or a transaction) gets a cursor, and how an attempt
    gets the next sequence number without two processes taking the same one.
    """

    placeholder: ClassVar[str] = "?"
    keys: KeyRing | None = None
    """The payloads (a stored update, a write call's effect) are sealed under these keys
    (``app.storage.encryption``); the records stay plain, as the budget sums read them."""
    row_lock: ClassVar[str] = ""
    """Appended to the SELECT of rows a transaction is about to update."""
    spent_sql: ClassVar[str]
    """A row's ``{usage}`` (tool_calls or tokens) read from its JSON record; 0 when the
    attempt was reused (it did no work)."""
    record_columns: ClassVar[tuple[str, ...]] = ("record",)
    """The columns an attempt's record is stored in (:meth:`_stored_record`)."""

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self.placeholder)

    @abstractmethod
    def _cursor(self, *, fsync: bool = True) -> AbstractContextManager[Cursor]:
        """A cursor whose every statement commits on its own.

        ``fsync=False``: the commit may wait for the next fsynced one of the database, for
        a row something durable is about to follow (a database that cannot tell the
        difference commits durably). A read commits nothing and asks for ``fsync=False``:
        the level it leaves is the one the attempts' rows are written at, so switching
        it back and forth costs no statement at each node.
        """

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Cursor]:
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
        columns = ", ".join(self.record_columns)
        marks = ", ".join("?" for _ in self.record_columns)
        return self._insert_next(
            self._sql(
                "INSERT INTO handoff_node_runs "
                f"(thread_id, seq, node_id, input_hash, status, {columns}) "
                f"SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ?, {marks} "
                "FROM handoff_node_runs WHERE thread_id = ? RETURNING seq"
            ),
            (
                thread_id,
                record.node_id,
                record.input_hash,
                record.status,
                *self._stored_record(record),
                thread_id,
            ),
        )

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Store the attempt's final record (and result) in one committed statement.

        A record still ``running`` is the attempt's progress (the receipts of the tool
        calls it made so far): it must outlive a killed process, as the start row does.
        """
        record = NodeRun.model_validate(run)
        # A succeeded attempt's checkpoint is committed (fsynced) right after it; a running
        # one's progress is as durable as its start row (see the SQLite ledger).
        with self._cursor(fsync=record.status not in ("succeeded", "running")) as cursor:
            cursor.execute(
                self._sql(
                    f"UPDATE handoff_node_runs SET status = ?, {self._record_set}, result = ? "
                    "WHERE thread_id = ? AND seq = ?"
                ),
                (
                    record.status,
                    *self._stored_record(record),
                    self._stored_result(result),
                    thread_id,
                    seq,
                ),
            )
            changed = cursor.rowcount
        if changed != 1:
            raise LookupError(f"no ledger entry {seq} for thread {thread_id!r}")

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first, each re-validated."""
        with self._cursor(fsync=False) as cursor:
            rows = cursor.execute(
                self._sql("SELECT record FROM handoff_node_runs WHERE thread_id = ? ORDER BY seq"),
                (thread_id,),
            ).fetchall()
        return [self._open_record(row[0]) for row in rows]

    @property
    def _record_set(self) -> str:
        return ", ".join(f"{column} = ?" for column in self.record_columns)

    def _stored_record(self, run: NodeRun) -> tuple[Any, ...]:
        """The values of :attr:`record_columns` for an attempt's record."""
        return (self._seal_record(run),)

    def _seal_record(self, run: NodeRun) -> str:
        """An attempt's record as stored: sealed under ``keys``, with what the sums read.

        The budget sums read ``reused`` and ``usage`` in the database (``spent_sql``); a
        sealed record keeps those two in the clear beside the sealed whole (its tool calls
        name what they were given).
        """
        plain = run.model_dump_json()
        if self.keys is None:
            return plain
        summary = {"reused": run.reused, "usage": run.usage.model_dump(mode="json")}
        return json.dumps({**summary, "sealed": seal_text(self.keys, plain)})

    def _open_record(self, stored: Any) -> NodeRun:
        """An attempt's record, opened if it was sealed, re-validated."""
        stored = self._text(stored)
        if stored.startswith('{"reused"'):
            sealed = json.loads(stored).get("sealed")
            if isinstance(sealed, str):
                stored = open_text(self.keys, sealed) or ""
        return NodeRun.model_validate_json(stored)

    def _text(self, stored: Any) -> str:
        """The text a record's or payload's column keeps, compressed or not (see SQLite's)."""
        return str(stored)

    def _stored_result(self, result: str | None) -> Any:
        """A node's stored update as its column keeps it: sealed under ``keys``, else as is."""
        return seal_text(self.keys, result)

    def _payload(self, statement: str, params: Sequence[Any]) -> str | None:
        """A stored payload, opened (it may be sealed, see ``keys``)."""
        with self._cursor(fsync=False) as cursor:
            row = cursor.execute(self._sql(statement), params).fetchone()
        return None if row is None else self._opened(row[0])

    def _opened(self, stored: Any) -> str | None:
        """A payload's text from what its column keeps (:meth:`_stored_result`)."""
        return open_text(self.keys, None if stored is None else self._text(stored))

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of the latest succeeded attempt with this input, if any."""
        return self._payload(
            "SELECT result FROM handoff_node_runs WHERE thread_id = ? AND node_id = ? "
            "AND input_hash = ? AND status = 'succeeded' AND result IS NOT NULL "
            "ORDER BY seq DESC LIMIT 1",
            (thread_id, node_id, input_hash),
        )

    def latest_result(self, thread_id: str, node_id: str) -> str | None:
        """The stored update of the node's latest succeeded attempt, whatever its input."""
        return self._payload(
            "SELECT result FROM handoff_node_runs WHERE thread_id = ? AND node_id = ? "
            "AND status = 'succeeded' AND result IS NOT NULL ORDER BY seq DESC LIMIT 1",
            (thread_id, node_id),
        )

    def tool_effect(self, thread_id: str, call_id: str) -> str | None:
        """What the thread's write call ``call_id`` did (receipt, output as JSON), if it ran."""
        return self._payload(
            "SELECT effect FROM handoff_tool_effects WHERE thread_id = ? AND call_id = ?",
            (thread_id, call_id),
        )

    def record_tool_effect(self, thread_id: str, call_id: str, effect: str) -> None:
        """Record, durably, that the write call ran; the first record of a call stands."""
        with self._cursor() as cursor:
            cursor.execute(
                self._sql(
                    "INSERT INTO handoff_tool_effects (thread_id, call_id, effect) "
                    "VALUES (?, ?, ?) ON CONFLICT (thread_id, call_id) DO NOTHING"
                ),
                (thread_id, call_id, seal_text(self.keys, effect)),
            )

    def tally(
        self, thread_id: str, node_id: str, input_hash: str, fanned: Sequence[str] = ()
    ) -> Tally:
        """The thread's records summed for a visit by the database, in one query.

        ``edge`` is the last row of a node outside the fan-out (``fanned``; none: the last
        row), where a branch task's share of the budget is judged (``graphs.budget``).
        """
        outside = f"node_id NOT IN ({', '.join('?' for _ in fanned)})" if fanned else "1 = 1"
        params = (thread_id, *fanned, node_id, input_hash, thread_id)
        with self._cursor(fsync=False) as cursor:
            # Written once the cursor is open: what a row spent is read from where the
            # table keeps it, which the open connection tells (SQLite's ``_spent``).
            calls = self._spent("tool_calls")
            tokens = self._spent("tokens")
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

    def _spent(self, usage: str) -> str:
        """The SQL of a row's ``usage`` spent (:attr:`spent_sql`)."""
        return self.spent_sql.format(usage=usage)

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
                run = abandoned(self._open_record(record), detail)
                cursor.execute(
                    self._sql(
                        f"UPDATE handoff_node_runs SET status = ?, {self._record_set} "
                        "WHERE thread_id = ? AND seq = ?"
                    ),
                    (run.status, *self._stored_record(run), thread_id, seq),
                )
        return len(rows)

    @abstractmethod
    def close(self) -> None:
        """Release the connection(s) this ledger opened."""
