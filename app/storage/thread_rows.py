"""A thread's rows in its database: sized in every table keyed by thread id; the audit's deleted.

Retention measures what a thread takes in each table with a ``thread_id`` column (the
saver's checkpoints, writes and blobs, the audit ledger, whatever a later table adds), read
from the database's own catalogue rather than a kept list. Deleting stays with each
table's owner: the saver deletes its checkpoints (``delete_thread``), and the audit's rows
are deleted here, from the tables the ledgers create.
"""

from __future__ import annotations

import contextlib
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from app.storage import sqlite_files
from app.storage.ledger import SqliteRunLedger
from graphs.errors import UsageError

if TYPE_CHECKING:
    from app.storage.backends import Backend

THREAD_COLUMN = "thread_id"
AUDIT_TABLES = ("handoff_node_runs", "handoff_tool_effects")
"""The audit ledger's tables (``app.storage.ledger``): the thread's attempts and write calls."""


def quoted(name: str) -> str:
    """A name read from the catalogue, as an SQL identifier (both databases quote alike)."""
    return '"' + name.replace('"', '""') + '"'


class ThreadRows(ABC):
    """The tables keyed by thread id, each with its columns, read once when opened."""

    def __init__(self, columns: dict[str, list[str]]) -> None:
        self.tables = {table: names for table, names in columns.items() if THREAD_COLUMN in names}

    @abstractmethod
    def size(self, thread_id: str) -> int:
        """Bytes the thread's rows hold, summed over every column of every keyed table."""

    @abstractmethod
    def delete_audit(self, thread_id: str) -> None:
        """Delete the thread's rows from the audit tables, in one transaction."""

    def _audit(self) -> list[str]:
        return [table for table in AUDIT_TABLES if table in self.tables]


class SqliteThreadRows(ThreadRows):
    """The tables of one SQLite file, on a connection of its own."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p "
            "WHERE m.type = 'table' ORDER BY m.name, p.cid"
        ).fetchall()
        columns: dict[str, list[str]] = {}
        for table, column in rows:
            columns.setdefault(str(table), []).append(str(column))
        super().__init__(columns)
        self.conn = conn

    def size(self, thread_id: str) -> int:
        """``length`` of each value as bytes (text cast to a blob counts its UTF-8 bytes)."""
        total = 0
        for table, names in self.tables.items():
            summed = " + ".join(
                f"coalesce(length(CAST({quoted(name)} AS BLOB)), 0)" for name in names
            )
            [(size,)] = self.conn.execute(
                f"SELECT coalesce(sum({summed}), 0) FROM {quoted(table)} WHERE {THREAD_COLUMN} = ?",
                (thread_id,),
            ).fetchall()
            total += int(size)
        return total

    def delete_audit(self, thread_id: str) -> None:
        """Inside ``BEGIN IMMEDIATE``, as every writer of the file works."""
        with sqlite_files.immediate(self.conn):
            for table in self._audit():
                self.conn.execute(f"DELETE FROM {table} WHERE {THREAD_COLUMN} = ?", (thread_id,))


class PostgresThreadRows(ThreadRows):
    """The tables of the URL's schema, on the backend's pool."""

    def __init__(self, pool: Any) -> None:
        with pool.connection() as conn:
            rows = conn.execute(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
            ).fetchall()
        columns: dict[str, list[str]] = {}
        for row in rows:
            columns.setdefault(str(row["table_name"]), []).append(str(row["column_name"]))
        super().__init__(columns)
        self.pool = pool

    def size(self, thread_id: str) -> int:
        """``pg_column_size`` of each value: the bytes stored, compressed where it is."""
        total = 0
        with self.pool.connection() as conn:
            for table, names in self.tables.items():
                summed = " + ".join(
                    f"coalesce(pg_column_size({quoted(name)}), 0)" for name in names
                )
                row = conn.execute(
                    f"SELECT coalesce(sum({summed}), 0) AS size FROM {quoted(table)} "
                    f"WHERE {THREAD_COLUMN} = %s",
                    (thread_id,),
                ).fetchone()
                total += int(row["size"])
        return total

    def delete_audit(self, thread_id: str) -> None:
        """In one transaction on a pooled connection."""
        with self.pool.connection() as conn, conn.transaction():
            for table in self._audit():
                conn.execute(f"DELETE FROM {table} WHERE {THREAD_COLUMN} = %s", (thread_id,))


@contextlib.contextmanager
def thread_rows(backend: Backend, *, read_only: bool = False) -> Iterator[ThreadRows]:
    """The thread-keyed tables of the backend's database; ``read_only`` for sizing only.

    A ``memory://`` database is refused: its threads end with the process that holds them.
    """
    if backend.pool is not None:
        yield PostgresThreadRows(backend.pool)
        return
    if not isinstance(backend.ledger, SqliteRunLedger):
        raise UsageError(
            f"{backend.where} keeps its threads only while this process runs; there is "
            "nothing to prune (retention needs sqlite:/// or postgresql://)"
        )
    conn = sqlite_files.connect(backend.ledger.path, read_only=read_only, isolation_level=None)
    with contextlib.closing(conn):
        yield SqliteThreadRows(conn)
