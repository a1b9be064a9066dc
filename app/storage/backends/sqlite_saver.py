"""An SQLite saver that stores each channel value once per version, as PostgresSaver does.

LangGraph's SqliteSaver serializes every channel value into every checkpoint row, so a
value that stays the same for six steps is stored six times and a thread's bytes grow with
values times checkpoints. PostgresSaver stores each value once per (thread, namespace,
channel, version) in ``checkpoint_blobs`` and keeps only the versions in the checkpoint
row. :class:`BlobSqliteSaver` does the same in the SQLite file, and goes one step further:

- ``put`` keeps values of bounded size (None, booleans, numbers) in the checkpoint row and
  stores every other one in ``checkpoint_blobs`` under the version the checkpoint gives
  it, unless that row exists already. It asks which rows exist instead of trusting
  ``new_versions``: a thread saved before this layout carries its unchanged values inline
  in its last row, and they get their blob rows when the resumed thread saves next.
- A task's write and the channel version it becomes are, for most channels, the same
  bytes: a large value is stored once per thread in ``checkpoint_values``, and the
  ``writes`` and ``checkpoint_blobs`` rows keep its digest
  (:mod:`app.storage.backends.sqlite_values`).
- That value and the checkpoint row are stored compressed when it makes them smaller, as
  PostgreSQL's TOAST compresses its large values and SQLite does not.
- Reads take the row's own values, then the blob rows its versions name, then the shared
  values those and the writes refer to. A row saved before either step holds its value
  itself, so old threads read as they always did; nothing is rewritten in place.
- ``delete_thread`` deletes the thread's rows in every table the saver owns.

The statements are written once, as generators (:mod:`app.storage.backends.sqlite_saver_sql`)
that a driver runs: one on ``sqlite3`` here, one on ``aiosqlite`` in
:mod:`app.storage.backends.sqlite_saver_aio`, so the dev server's async saver stores exactly
what the CLI's sync one does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from app.storage.backends import sqlite_saver_sql as sql
from app.storage.backends.sqlite_steps import Steps, run
from app.storage.backends.sqlite_values import Keyframes

T = TypeVar("T")


def owned_tables() -> tuple[str, ...]:
    """The tables the saver creates, read from a database it set up (not a kept list)."""
    with closing(sqlite3.connect(":memory:")) as conn:
        BlobSqliteSaver(conn).setup()
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return tuple(sorted(name for (name,) in names))


class BlobSqliteSaver(SqliteSaver):
    """SqliteSaver storing each channel value once per version (see the module docstring).

    The delta-channel history is LangGraph's generic walk over ``get_tuple``: SqliteSaver's
    own reads the values inline, where this layout no longer keeps them.
    """

    def __init__(self, conn: sqlite3.Connection, *, serde: SerializerProtocol | None = None):
        super().__init__(conn, serde=serde)
        self._blobs = False
        self.keyframes = Keyframes()

    def setup(self) -> None:
        """The saver's own tables, then SqliteSaver's; a read-only file is left as it is."""
        if self.is_setup:
            return
        try:
            for statement in sql.CREATE_TABLES:
                self.conn.execute(statement)
            self.conn.commit()
            self._blobs = True
        except sqlite3.OperationalError as error:
            if "readonly database" not in str(error):
                raise
        super().setup()

    def _has_blobs(self, cursor: sqlite3.Cursor) -> bool:
        """Whether the file has ``checkpoint_blobs``; asked until it has (it is never dropped)."""
        if not self._blobs:
            self._blobs = bool(cursor.execute(sql.BLOBS_PRESENT).fetchall())
        return self._blobs

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the latest without an id), its values read."""
        with self.cursor(transaction=False) as cur:
            blobs = self._has_blobs(cur)
            steps = sql.get(
                self.serde,
                config,
                blobs=blobs,
                task_path=self._has_task_path,
                keyframes=self.keyframes,
            )
            return run(cur, steps)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The matching checkpoints, newest first, each with its values and writes."""
        query = sql.listing(config, filter, before, limit)
        with self.cursor(transaction=False) as cur, closing(self.conn.cursor()) as reads:
            blobs = self._has_blobs(reads)
            for row in cur.execute(query.text, query.params):
                yield run(
                    reads, sql.load(self.serde, row, blobs=blobs, task_path=self._has_task_path)
                )

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save the checkpoint and its new blob rows in one transaction.

        ``new_versions`` is not needed: every value whose (channel, version) has no row
        gets one, which covers the new versions and a thread saved before this layout.
        """
        with self.cursor(transaction=False) as cur:
            return self._transaction(
                cur, sql.put(self.serde, config, checkpoint, metadata, self.keyframes)
            )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's writes and the values they share in one transaction."""
        with self.cursor(transaction=False) as cur:
            self._transaction(
                cur,
                sql.put_writes(self.serde, config, writes, task_id, task_path, self.keyframes),
            )

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, writes, blob rows and values in one transaction."""
        with self.cursor(transaction=False) as cur:
            self._transaction(cur, sql.delete(thread_id))
        self.keyframes.forget(str(thread_id))

    def _transaction(self, cur: sqlite3.Cursor, steps: Steps[T]) -> T:
        try:
            result = run(cur, steps)
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()
        return result

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """LangGraph's generic walk (SqliteSaver's own looks for values inline only)."""
        return BaseCheckpointSaver.get_delta_channel_history(self, config=config, channels=channels)
