"""The statements of the SQLite savers, written once for the sync and the async driver.

The layout (see :mod:`app.storage.backends.sqlite_saver`): a checkpoint row keeps channel
versions and small scalars, compressed; every other value is in ``checkpoint_blobs``, once
per (thread, namespace, channel, version); a value large enough is shared, compressed,
through ``checkpoint_values`` by that row and by the write it came from
(:mod:`app.storage.backends.sqlite_values`). Each function here is a generator of
:class:`~app.storage.backends.sqlite_steps.Sql` statements that the sync saver runs on
``sqlite3`` and the async one on ``aiosqlite``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite.utils import (
    load_pending_writes,
    pending_writes_sql,
    search_where,
)

from app.storage.backends.sqlite_steps import KEYS_PER_QUERY, Rows, Sql, Steps
from app.storage.backends.sqlite_values import (
    CREATE_VALUES,
    DELTA,
    VALUES_TABLE,
    Keyframes,
    Sharing,
    against,
    packed,
    resolved,
    restored,
    sealed,
    unpacked,
)

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
) WITHOUT ROWID"""
"""Its rows are keys and a digest or a short value: kept in the key's own b-tree, not in a
table beside an index that repeats the key (a file made before keeps its table as it is)."""
CREATE_WRITES = """
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_path TEXT NOT NULL DEFAULT '',
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID"""
"""SqliteSaver's ``writes`` (its columns and key), made before its setup runs so that a new
file has it WITHOUT ROWID too: with large values shared, a write row is mostly its key.
SqliteSaver's setup then finds the table and leaves it; a file made before keeps its own."""
CREATE_TABLES = (CREATE_WRITES, CREATE_BLOBS, CREATE_VALUES)
"""The tables the saver makes before SqliteSaver's setup, which adds ``checkpoints``."""
BLOBS_PRESENT = f"SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '{BLOBS_TABLE}'"
READ_TABLES = ("checkpoints", "writes")
"""The tables a file needs for its threads to be read: a file from before
``checkpoint_blobs`` existed has only these, and reads without it."""
DELETE_THREAD = tuple(
    f"DELETE FROM {table} WHERE thread_id = ?"
    for table in (*READ_TABLES, BLOBS_TABLE, VALUES_TABLE)
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
INSERT_WRITES = (
    "INSERT OR {} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, "
    "idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
"""SqliteSaver's: REPLACE when every write is of a special channel (an error, an interrupt,
a resume value), which a retry saves anew; else IGNORE, the first save of a write wins."""


ROW_KEYFRAME = "\0checkpoint row "
"""Where a namespace's keyframe checkpoint row is kept among a thread's channels' keyframes
(a name no channel has): a row is stored as its difference from that one, as values are
(:mod:`app.storage.backends.sqlite_values`), the keyframe named by its checkpoint id."""
SELECT_ROW = (
    "SELECT type, checkpoint FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
)


def packed_row(
    thread_id: str,
    namespace: str,
    checkpoint_id: str,
    kind: str,
    data: bytes,
    keyframes: Keyframes | None,
) -> Steps[tuple[str, bytes]]:
    """A checkpoint row as stored: its difference from the namespace's keyframe row, or whole.

    The keyframe is used once this transaction finds it stored whole; a row stored whole
    becomes the keyframe. Most of a row is the versions it names, a few of them new.
    """
    if keyframes is None or sealed(kind):
        return packed(kind, data)
    keyframe = keyframes.of(thread_id, ROW_KEYFRAME + namespace)
    if keyframe is not None:
        base_id, dictionary = keyframe
        found = yield Sql(SELECT_ROW, (thread_id, namespace, base_id.decode()))
        usable = found and not str(found[0][0]).startswith(DELTA)
        keyframe = (bytes([len(base_id)]) + base_id, dictionary) if usable else None
    stored, whole = against(kind, data, keyframe)
    if whole:
        keyframes.keep(
            thread_id, ROW_KEYFRAME + namespace, checkpoint_id.encode(), data, replace=True
        )
    return stored


def row_bytes(
    thread_id: str,
    namespace: str,
    checkpoint_id: str,
    kind: str,
    data: bytes,
    keyframes: Keyframes | None = None,
) -> Steps[tuple[str, bytes]]:
    """The serializer's type and bytes of a stored checkpoint row, its keyframe read if any.

    With ``keyframes``, the row (or its keyframe) becomes the namespace's keyframe where
    none is kept yet. A keyframe missing, or itself a difference, is a damaged file.
    """
    if not kind.startswith(DELTA):
        serialized = keyframe = unpacked(kind, data)
        base_id = checkpoint_id.encode()
    else:
        size = data[0]
        base_id = bytes(data[1 : 1 + size])
        found = yield Sql(SELECT_ROW, (thread_id, namespace, base_id.decode()))
        if not found or str(found[0][0]).startswith(DELTA):
            raise LookupError(
                f"thread {thread_id!r} holds a checkpoint row as a difference from row "
                f"{base_id.decode()!r}, which is {'a difference itself' if found else 'gone'}: "
                "the file is damaged"
            )
        keyframe = unpacked(str(found[0][0]), bytes(found[0][1]))
        serialized = restored(kind, bytes(data[1 + size :]), keyframe[1])
    if keyframes is not None and not sealed(serialized[0]):
        keyframes.keep(thread_id, ROW_KEYFRAME + namespace, base_id, keyframe[1], replace=False)
    return serialized


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
    for start in range(0, len(pairs), KEYS_PER_QUERY):
        chunk = pairs[start : start + KEYS_PER_QUERY]
        term = "(thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?)"
        found += yield Sql(
            f"SELECT {columns} FROM {BLOBS_TABLE} WHERE " + " OR ".join(term for _ in chunk),
            tuple(item for pair in chunk for item in (thread_id, namespace, *pair)),
        )
    return found


def blob_values(
    thread_id: str, namespace: str, keys: Mapping[str, str], keyframes: Keyframes | None = None
) -> Steps[Rows]:
    """(channel, type, bytes) of the values stored under ``keys``, shared ones read in.

    With ``keyframes``, the values read are their channels' keyframes where none is kept.
    """
    found = yield from blob_rows(thread_id, namespace, keys)
    return (yield from resolved(thread_id, found, at=1, keyframes=keyframes))


def load(
    serde: SerializerProtocol,
    row: tuple[Any, ...],
    *,
    blobs: bool,
    task_path: bool,
    config: RunnableConfig | None = None,
    keyframes: Keyframes | None = None,
) -> Steps[CheckpointTuple]:
    """The checkpoint tuple of a ``SELECT_ROWS`` row, its stored values and writes read.

    ``blobs``: whether the file has ``checkpoint_blobs`` (a file read before any saver of
    this layout opened it for writing has not). ``config``: what the caller asked for, kept
    as the tuple's config as SqliteSaver keeps it; else one is made from the row.
    ``keyframes``: the saver's, which the values read seed for the writes that follow.
    """
    thread_id, namespace, checkpoint_id, parent_id, kind, data, metadata = row
    serialized = yield from row_bytes(thread_id, namespace, checkpoint_id, kind, data, keyframes)
    checkpoint = cast(Checkpoint, serde.loads_typed(serialized))
    wanted = named_blobs(checkpoint)
    if blobs and wanted:
        found = yield from blob_values(thread_id, namespace, wanted, keyframes)
        checkpoint["channel_values"] = {
            **checkpoint["channel_values"],
            **{channel: serde.loads_typed((kind_, blob)) for channel, kind_, blob in found},
        }
    stored = yield Sql(pending_writes_sql(task_path), (thread_id, namespace, checkpoint_id))
    writes = yield from resolved(thread_id, stored, at=2)
    own = {"thread_id": thread_id, "checkpoint_ns": namespace}
    return CheckpointTuple(
        config or {"configurable": {**own, "checkpoint_id": checkpoint_id}},
        checkpoint,
        cast(CheckpointMetadata, json.loads(metadata) if metadata is not None else {}),
        {"configurable": {**own, "checkpoint_id": parent_id}} if parent_id else None,
        load_pending_writes(writes, serde),
    )


def get(
    serde: SerializerProtocol,
    config: RunnableConfig,
    *,
    blobs: bool,
    task_path: bool,
    keyframes: Keyframes | None = None,
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
    return (
        yield from load(
            serde, rows[0], blobs=blobs, task_path=task_path, config=asked, keyframes=keyframes
        )
    )


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
    keyframes: Keyframes | None = None,
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
        sharing = Sharing(thread_id, keyframes)
        new = [
            (
                thread_id,
                namespace,
                channel,
                keys[channel],
                *sharing.refer(*serde.dumps_typed(value), channel),
            )
            for channel, value in apart.items()
            if channel not in stored
        ]
        yield from sharing.store()
        if new:
            yield Sql(INSERT_BLOB, new, many=True)
    kept = {k: v for k, v in checkpoint["channel_values"].items() if k not in apart}
    kind, data = yield from packed_row(
        thread_id,
        namespace,
        checkpoint["id"],
        *serde.dumps_typed({**checkpoint, "channel_values": kept}),
        keyframes,
    )
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


def put_writes(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    keyframes: Keyframes | None = None,
) -> Steps[None]:
    """Store a task's writes as SqliteSaver does, large values shared (see sqlite_values)."""
    thread_id = str(config["configurable"]["thread_id"])
    sharing = Sharing(thread_id, keyframes)
    rows = [
        (
            thread_id,
            str(config["configurable"]["checkpoint_ns"]),
            str(config["configurable"]["checkpoint_id"]),
            task_id,
            task_path,
            WRITES_IDX_MAP.get(channel, idx),
            channel,
            *sharing.refer(*serde.dumps_typed(value), channel),
        )
        for idx, (channel, value) in enumerate(writes)
    ]
    yield from sharing.store()
    special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
    yield Sql(INSERT_WRITES.format("REPLACE" if special else "IGNORE"), rows, many=True)


def delete(thread_id: str) -> Steps[None]:
    """Every row of the thread, in all the saver's tables."""
    for text in DELETE_THREAD:
        yield Sql(text, (str(thread_id),))
