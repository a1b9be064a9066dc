"""The audit ledger in the PostgreSQL schema that holds the checkpoints."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from app.storage.ledger.base import Cursor, SqlRunLedger
from app.storage.postgres_tables import PostgresTables

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
);
CREATE TABLE IF NOT EXISTS handoff_tool_effects (
    thread_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    effect TEXT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, call_id)
)
"""


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
    def _cursor(self, *, fsync: bool = True) -> Iterator[Cursor]:
        from psycopg.rows import tuple_row

        with self._db.connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
            yield cursor

    @contextmanager
    def _transaction(self) -> Iterator[Cursor]:
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
