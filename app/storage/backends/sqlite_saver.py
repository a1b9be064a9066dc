"""An SQLite saver that stores each channel value once per version, as PostgresSaver does.

LangGraph's SqliteSaver serializes every channel value into every checkpoint row, so a
value that stays the same for six steps is stored six times and a thread's bytes grow with
values times checkpoints. PostgresSaver stores each value once per (thread, namespace,
channel, version) in ``checkpoint_blobs`` and keeps only the versions in the checkpoint
row. :class:`BlobSqliteSaver` does the same in the SQLite file:

- ``put`` keeps values of bounded size (None, booleans, numbers) in the checkpoint row and
  stores every other one in ``checkpoint_blobs`` under the version the checkpoint gives
  it, unless that row exists already. It asks which rows exist instead of trusting
  ``new_versions``: a thread saved before this layout carries its unchanged values inline
  in its last row, and they get their blob rows when the resumed thread saves next.
- Reads take the row's own values, then the blob rows its versions name. A row saved
  before this layout holds every value itself and names no blob, so old threads read as
  they always did; nothing is rewritten in place.
- ``delete_thread`` deletes the thread's blob rows with its checkpoints and writes.

The statements are written once, as generators (:data:`Steps`) that a driver runs: one on
``sqlite3`` here, one on ``aiosqlite`` in :mod:`app.storage.backends.sqlite_saver_aio`, so the dev
server's async saver stores exactly what the CLI's sync one does.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.utils import (
    load_pending_writes,
    pending_writes_sql,
    search_where,
)

T = TypeVar("T")
Rows = list[tuple[Any, ...]]

BLOBS_TABLE = "checkpoint_blobs"
CREATE_BLOBS = f"""
CREATE TABLE IF NOT EXISTS {BLOBS_TABLE} (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    blob BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
)"""
BLOBS_PRESENT = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{BLOBS_TABLE}'"
READ_TABLES = ("checkpoints", "writes")
"""The tables a file needs for its threads to be read: a file from before
``checkpoint_blobs`` existed has only these, and reads without it."""
DELETE_THREAD = tuple(
    f"DELETE FROM {table} WHERE thread_id = ?" for table in (*READ_TABLES, BLOBS_TABLE)
)
SELECT_ROWS = (
    "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, "
    "metadata FROM checkpoints"
)
INSERT_BLOB = f"INSERT OR IGNORE INTO {BLOBS_TABLE} VALUES (?, ?, ?, ?, ?, ?)"
INSERT_CHECKPOINT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
    "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_KEYS_PER_QUERY = 100
"""Blob keys per query: 400 parameters, under SQLite's oldest limit (999)."""


@dataclass(frozen=True)
class Sql:
    """One statement for a driver to run; ``many``: ``params`` is a list of rows."""

    text: str
    params: Sequence[Any] = ()
    many: bool = False


Steps = Generator[Sql, Rows, T]
"""Statements to run in order; each is sent back the rows it fetched (none for ``many``)."""


def run(cursor: sqlite3.Cursor, steps: Steps[T]) -> T:
    """Run the statements on ``cursor``; returns what the steps return."""
    try:
        statement = next(steps)
        while True:
            if statement.many:
                cursor.executemany(statement.text, statement.params)
                rows: Rows = []
            else:
                rows = cursor.execute(statement.text, statement.params).fetchall()
            statement = steps.send(rows)
    except StopIteration as done:
        return cast(T, done.value)


def stored_apart(value: object) -> bool:
    """Whether a value goes to ``checkpoint_blobs``: all but None, booleans and numbers.

    Those have a bounded size, smaller than a blob row's key; strings, bytes, containers
    and models can grow, and a value in the row is repeated in every later row.
    """
    return not (value is None or isinstance(value, bool | int | float))


def named_blobs(checkpoint: Mapping[str, Any]) -> dict[str, str]:
    """The blob key of each channel the checkpoint names a version for but holds no value of."""
    held = checkpoint.get("channel_values") or {}
    versions = checkpoint.get("channel_versions") or {}
    return {channel: str(version) for channel, version in versions.items() if channel not in held}


def blob_rows(
    thread_id: str, namespace: str, keys: Mapping[str, str], columns: str = "channel, type, blob"
) -> Steps[Rows]:
    """``columns`` of the blob rows stored under ``keys`` (channel → version).

    Each key is a term of its own, whole, so that SQLite looks each row up by its primary
    key; with the thread and namespace factored out it walks every blob row of the thread.
    """
    pairs = list(keys.items())
    found: Rows = []
    for start in range(0, len(pairs), _KEYS_PER_QUERY):
        chunk = pairs[start : start + _KEYS_PER_QUERY]
        term = "(thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?)"
        found += yield Sql(
            f"SELECT {columns} FROM {BLOBS_TABLE} WHERE " + " OR ".join(term for _ in chunk),
            tuple(item for pair in chunk for item in (thread_id, namespace, *pair)),
        )
    return found


def load(
    serde: SerializerProtocol,
    row: tuple[Any, ...],
    *,
    blobs: bool,
    task_path: bool,
    config: RunnableConfig | None = None,
) -> Steps[CheckpointTuple]:
    """The checkpoint tuple of a ``SELECT_ROWS`` row, its stored values and writes read.

    ``blobs``: whether the file has ``checkpoint_blobs`` (a file read before any saver of
    this layout opened it for writing has not). ``config``: what the caller asked for, kept
    as the tuple's config as SqliteSaver keeps it; else one is made from the row.
    """
    thread_id, namespace, checkpoint_id, parent_id, kind, data, metadata = row
    checkpoint = cast(Checkpoint, serde.loads_typed((kind, data)))
    wanted = named_blobs(checkpoint)
    if blobs and wanted:
        found = yield from blob_rows(thread_id, namespace, wanted)
        checkpoint["channel_values"] = {
            **checkpoint["channel_values"],
            **{channel: serde.loads_typed((kind_, blob)) for channel, kind_, blob in found},
        }
    writes = yield Sql(pending_writes_sql(task_path), (thread_id, namespace, checkpoint_id))
    own = {"thread_id": thread_id, "checkpoint_ns": namespace}
    return CheckpointTuple(
        config or {"configurable": {**own, "checkpoint_id": checkpoint_id}},
        checkpoint,
        cast(CheckpointMetadata, json.loads(metadata) if metadata is not None else {}),
        {"configurable": {**own, "checkpoint_id": parent_id}} if parent_id else None,
        load_pending_writes(writes, serde),
    )


def get(
    serde: SerializerProtocol, config: RunnableConfig, *, blobs: bool, task_path: bool
) -> Steps[CheckpointTuple | None]:
    """The checkpoint ``config`` names, or the thread's latest in its namespace."""
    thread_id = str(config["configurable"]["thread_id"])
    namespace = config["configurable"].get("checkpoint_ns", "")
    where = " WHERE thread_id = ? AND checkpoint_ns = ?"
    if checkpoint_id := get_checkpoint_id(config):
        rows = yield Sql(
            SELECT_ROWS + where + " AND checkpoint_id = ?", (thread_id, namespace, checkpoint_id)
        )
    else:
        rows = yield Sql(
            SELECT_ROWS + where + " ORDER BY checkpoint_id DESC LIMIT 1", (thread_id, namespace)
        )
    if not rows:
        return None
    asked = config if checkpoint_id else None
    return (yield from load(serde, rows[0], blobs=blobs, task_path=task_path, config=asked))


def listing(
    config: RunnableConfig | None,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> Sql:
    """The query for ``list``: SqliteSaver's, rows newest first."""
    where, params = search_where(config, filter, before)
    text = f"{SELECT_ROWS} {where} ORDER BY checkpoint_id DESC"
    if limit is not None:
        return Sql(f"{text} LIMIT ?", (*params, limit))
    return Sql(text, tuple(params))


def put(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
) -> Steps[RunnableConfig]:
    """Store the values that have no blob row yet, then the row with the rest.

    A value whose channel has no version cannot be keyed, so it stays in the row (the
    conformance suite saves such checkpoints; LangGraph itself versions every channel).
    """
    thread_id = str(config["configurable"]["thread_id"])
    namespace = str(config["configurable"]["checkpoint_ns"])
    versions = checkpoint["channel_versions"]
    apart = {
        channel: value
        for channel, value in checkpoint["channel_values"].items()
        if channel in versions and stored_apart(value)
    }
    if apart:
        keys = {channel: str(versions[channel]) for channel in apart}
        present = yield from blob_rows(thread_id, namespace, keys, columns="channel")
        stored = {channel for (channel,) in present}
        new = [
            (thread_id, namespace, channel, keys[channel], *serde.dumps_typed(value))
            for channel, value in apart.items()
            if channel not in stored
        ]
        if new:
            yield Sql(INSERT_BLOB, new, many=True)
    kept = {k: v for k, v in checkpoint["channel_values"].items() if k not in apart}
    kind, data = serde.dumps_typed({**checkpoint, "channel_values": kept})
    saved_metadata = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
    yield Sql(
        INSERT_CHECKPOINT,
        (
            thread_id,
            namespace,
            checkpoint["id"],
            config["configurable"].get("checkpoint_id"),
            kind,
            data,
            saved_metadata.encode("utf-8", "ignore"),
        ),
    )
    return {
        "configurable": {
            "thread_id": config["configurable"]["thread_id"],
            "checkpoint_ns": namespace,
            "checkpoint_id": checkpoint["id"],
        }
    }


def delete(thread_id: str) -> Steps[None]:
    """Every row of the thread, in all three tables."""
    for text in DELETE_THREAD:
        yield Sql(text, (str(thread_id),))


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

    def setup(self) -> None:
        """``checkpoint_blobs``, then SqliteSaver's tables; a read-only file is left as it is."""
        if self.is_setup:
            return
        try:
            self.conn.execute(CREATE_BLOBS)
            self.conn.commit()
            self._blobs = True
        except sqlite3.OperationalError as error:
            if "readonly database" not in str(error):
                raise
        super().setup()

    def _has_blobs(self, cursor: sqlite3.Cursor) -> bool:
        """Whether the file has ``checkpoint_blobs``; asked until it has (it is never dropped)."""
        if not self._blobs:
            self._blobs = bool(cursor.execute(BLOBS_PRESENT).fetchall())
        return self._blobs

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the latest without an id), its values read."""
        with self.cursor(transaction=False) as cur:
            blobs = self._has_blobs(cur)
            return run(cur, get(self.serde, config, blobs=blobs, task_path=self._has_task_path))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The matching checkpoints, newest first, each with its values and writes."""
        query = listing(config, filter, before, limit)
        with self.cursor(transaction=False) as cur, closing(self.conn.cursor()) as reads:
            blobs = self._has_blobs(reads)
            for row in cur.execute(query.text, query.params):
                yield run(reads, load(self.serde, row, blobs=blobs, task_path=self._has_task_path))

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
            return self._transaction(cur, put(self.serde, config, checkpoint, metadata))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, writes and blob rows in one transaction."""
        with self.cursor(transaction=False) as cur:
            self._transaction(cur, delete(thread_id))

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
