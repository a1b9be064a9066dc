"""A glance at a PostgreSQL thread: LangGraph's own query, with the skipped channels not selected.

The PostgreSQL saver keeps each channel value in a row of ``checkpoint_blobs``, so leaving a
channel out is a condition on that join; a count reads one blob row, shallowly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, get_checkpoint_id
from langgraph.checkpoint.serde.base import SerializerProtocol

from app.storage.encryption import unsealed
from app.storage.thread_reads.packed import count_field, shallow_value

Rows = list[tuple[Any, ...]]
"""Rows of a query, as tuples."""


def is_postgres(saver: BaseCheckpointSaver[str]) -> bool:
    """Whether ``saver`` is LangGraph's PostgresSaver (False without the PostgreSQL extra)."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # the PostgreSQL extra is not installed: no such saver exists
        return False
    return isinstance(saver, PostgresSaver)


class PostgresGlance:
    """Reads of one PostgresSaver's database that leave the ``skipped`` channels unread."""

    def __init__(
        self, inner: BaseCheckpointSaver[str], skipped: frozenset[str], serde: SerializerProtocol
    ) -> None:
        self.inner = inner
        self.skipped = skipped
        self.serde = serde
        self._selecting: BaseCheckpointSaver[str] | None = None

    def selecting(self) -> BaseCheckpointSaver[str]:
        """A PostgresSaver on the same connections whose query leaves the skipped out."""
        if self._selecting is None:
            from langgraph.checkpoint.postgres import PostgresSaver

            assert isinstance(self.inner, PostgresSaver)
            saver = PostgresSaver(self.inner.conn, serde=self.serde)
            saver.SELECT_SQL = leave_out(PostgresSaver.SELECT_SQL, self.skipped)
            self._selecting = saver
        return self._selecting

    def rows(self, query: str, args: Sequence[Any]) -> Rows:
        """Rows of a query on the saver's own connections (a pool's, or its one connection)."""
        from psycopg.rows import tuple_row
        from psycopg_pool import ConnectionPool

        connection = getattr(self.inner, "conn")  # noqa: B009  # PostgresSaver's, untyped here
        if isinstance(connection, ConnectionPool):
            with connection.connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
                return list(cursor.execute(query, tuple(args)).fetchall())
        with getattr(self.inner, "lock"), connection.cursor(row_factory=tuple_row) as cursor:  # noqa: B009
            return list(cursor.execute(query, tuple(args)).fetchall())

    def count_items(self, config: RunnableConfig, channel: str, field: str) -> int | None:
        """Items in list ``field`` of the model in ``channel``, from its one blob row."""
        where = "c.thread_id = %s AND c.checkpoint_ns = %s"
        args: list[Any] = [
            channel,
            str(config["configurable"]["thread_id"]),
            str(config["configurable"].get("checkpoint_ns", "")),
        ]
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            where += " AND c.checkpoint_id = %s"
            args.append(checkpoint_id)
        args.append(channel)
        rows = self.rows(
            "SELECT b.type, b.blob FROM (SELECT thread_id, checkpoint_ns, "
            "checkpoint -> 'channel_versions' ->> %s AS version, checkpoint_id "
            f"FROM checkpoints c WHERE {where} ORDER BY checkpoint_id DESC LIMIT 1) AS c "
            "JOIN checkpoint_blobs b ON b.thread_id = c.thread_id "
            "AND b.checkpoint_ns = c.checkpoint_ns AND b.version = c.version "
            "AND b.channel = %s",
            args,
        )
        if not rows or rows[0][1] is None:
            return None
        kind, blob = unsealed(self.serde, rows[0][0], bytes(rows[0][1]))
        if kind != "msgpack":
            return None
        return count_field(shallow_value(blob), field)


def leave_out(select_sql: str, skipped: frozenset[str]) -> str:
    """LangGraph's checkpoint query with the skipped channels' values and writes not selected.

    Its two anchors are checked, so a LangGraph release that changes the query fails
    loudly here instead of reading everything.
    """
    if not skipped:
        return select_sql
    names = ", ".join(f"'{channel}'" for channel in sorted(skipped))
    anchors = {
        "and bl.version = jsonb_each_text.value": f"and bl.channel not in ({names})",
        "and cw.checkpoint_id = checkpoints.checkpoint_id": f"and cw.channel not in ({names})",
    }
    for anchor, condition in anchors.items():
        if select_sql.count(anchor) != 1:
            raise RuntimeError(
                f"LangGraph's PostgresSaver.SELECT_SQL no longer has {anchor!r}: update "
                "app/storage/thread_reads/postgres.py for this langgraph-checkpoint-postgres "
                "release"
            )
        select_sql = select_sql.replace(anchor, f"{anchor}\n            {condition}")
    return select_sql
