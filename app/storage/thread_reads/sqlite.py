"""A glance at an SQLite thread: the values of the channels asked for, read from their rows.

``app.storage.backends.sqlite_saver`` keeps each channel value in a blob row of its own, so the
large values are simply not selected. A checkpoint saved before that layout holds every
channel inline; its row is unpacked only to its top level, and the skipped channels are cut
out before anything is decoded.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from contextlib import closing
from typing import Any, TypeVar, cast

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from app.storage.backends.sqlite_saver_sql import (
    BLOBS_PRESENT,
    blob_values,
    named_blobs,
    row_bytes,
)
from app.storage.backends.sqlite_steps import Steps, run
from app.storage.backends.sqlite_values import resolved
from app.storage.encryption import unsealed
from app.storage.thread_reads.packed import (
    MSGPACK_OPTIONS,
    count_decoded,
    count_field,
    packed_default,
    shallow,
    shallow_value,
)

Rows = list[tuple[Any, ...]]
"""Rows of a query, as tuples."""
_LeftOut = tuple[tuple[str, str, str], dict[str, Any], dict[str, str]]
V = TypeVar("V")


class SqliteGlance:
    """Reads of one SQLite saver's file that leave the ``skipped`` channels undecoded."""

    def __init__(
        self, inner: SqliteSaver, skipped: frozenset[str], serde: SerializerProtocol
    ) -> None:
        self.inner = inner
        self.skipped = skipped
        self.serde = serde
        self._task_path: bool | None = None
        self._blobs = False
        self._left_out: _LeftOut | None = None
        """What the last read left out, by the checkpoint it is of: the values its row
        held, still encoded, and the blob keys of the others. ``count_items`` on that
        checkpoint (what ``status`` asks next) reads no checkpoint row again."""

    def rows(self, query: str, args: Sequence[Any]) -> Rows:
        """Rows of a query on the saver's own connection, under its lock."""
        with self.inner.lock:
            return [tuple(row) for row in self.inner.conn.execute(query, tuple(args))]

    def count_items(self, config: RunnableConfig, channel: str, field: str) -> int | None:
        """Items in list ``field`` of the model in ``channel`` (see ``GlanceSaver``)."""
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        checkpoint_id = get_checkpoint_id(config)
        key = (thread_id, namespace, checkpoint_id or "")
        if self._left_out is not None and self._left_out[0] == key:
            _, held, apart = self._left_out
        else:
            row = self._checkpoint(thread_id, namespace, checkpoint_id)
            if row is None:
                return None
            stored = row_bytes(thread_id, namespace, row[0], row[2], row[3])
            kind, blob = unsealed(self.serde, *self._steps(stored))
            if kind != "msgpack":
                return count_decoded(self.inner, config, channel, field)
            found = shallow(blob)
            held = found.get("channel_values") or {}
            apart = named_blobs(found)
        if channel in held or channel not in apart:
            return count_field(held.get(channel), field)
        return self._blob_count(thread_id, namespace, channel, apart[channel], field)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the latest without an id), skipped channels out."""
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        row = self._checkpoint(thread_id, namespace, get_checkpoint_id(config))
        if row is None:
            return None
        checkpoint_id, parent_id, kind, blob, metadata = row
        if self._task_path is None:
            columns = {column[1] for column in self.rows("PRAGMA table_info(writes)", ())}
            self._task_path = "task_path" in columns
        path = "task_path" if self._task_path else "''"
        marks = ", ".join("?" for _ in self.skipped) or "NULL"
        stored = self.rows(
            f"SELECT task_id, channel, type, value, {path}, idx FROM writes WHERE thread_id = ? "
            f"AND checkpoint_ns = ? AND checkpoint_id = ? AND channel NOT IN ({marks})",
            (thread_id, namespace, checkpoint_id, *sorted(self.skipped)),
        )
        writes = self._steps(resolved(thread_id, stored, at=2))
        pending: list[PendingWrite] = [
            (task, channel, self.serde.loads_typed((kind_, value)))
            for task, channel, kind_, value, _, _ in sorted(
                writes, key=lambda write: writes_sort_key(write[4], write[0], write[5])
            )
        ]
        own = {"thread_id": thread_id, "checkpoint_ns": namespace}
        return CheckpointTuple(
            config={"configurable": {**own, "checkpoint_id": checkpoint_id}},
            checkpoint=self._selected(kind, blob, (thread_id, namespace, checkpoint_id)),
            metadata=cast(CheckpointMetadata, _json(metadata)),
            parent_config={"configurable": {**own, "checkpoint_id": parent_id}}
            if parent_id
            else None,
            pending_writes=pending,
        )

    def _blob_rows(self, thread_id: str, namespace: str, keys: Mapping[str, str]) -> Rows:
        """(channel, type, bytes) of the values stored under ``keys``; none in a file without."""
        if not keys:
            return []
        if not self._blobs:
            self._blobs = bool(self.rows(BLOBS_PRESENT, ()))
            if not self._blobs:
                return []
        return self._steps(blob_values(thread_id, namespace, keys))

    def _steps(self, steps: Steps[V]) -> V:
        with self.inner.lock, closing(self.inner.conn.cursor()) as cursor:
            return run(cursor, steps)

    def _blob_count(
        self, thread_id: str, namespace: str, channel: str, version: str, field: str
    ) -> int | None:
        """Items in list ``field`` of the model in one blob row, without building the model."""
        for _, stored_kind, stored in self._blob_rows(thread_id, namespace, {channel: version}):
            kind, blob = unsealed(self.serde, stored_kind, stored)
            if kind != "msgpack":
                return count_field(self.serde.loads_typed((kind, blob)), field)
            return count_field(shallow_value(blob), field)
        return None

    def _checkpoint(
        self, thread_id: str, namespace: str, checkpoint_id: str | None
    ) -> tuple[Any, ...] | None:
        columns = "checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
        where = "WHERE thread_id = ? AND checkpoint_ns = ?"
        if checkpoint_id:
            rows = self.rows(
                f"SELECT {columns} FROM checkpoints {where} AND checkpoint_id = ?",
                (thread_id, namespace, checkpoint_id),
            )
        else:
            rows = self.rows(
                f"SELECT {columns} FROM checkpoints {where} ORDER BY checkpoint_id DESC LIMIT 1",
                (thread_id, namespace),
            )
        return tuple(rows[0]) if rows else None

    def _selected(self, kind: str, blob: bytes, key: tuple[str, str, str]) -> Checkpoint:
        """The checkpoint with the skipped channels left out before anything is decoded.

        Values the row holds are cut out of its msgpack; of the values in blob rows, only
        the channels not skipped are read.
        """
        thread_id, namespace, checkpoint_id = key
        stored = row_bytes(thread_id, namespace, checkpoint_id, kind, blob)
        kind, blob = unsealed(self.serde, *self._steps(stored))
        if kind != "msgpack":  # another encoding: decoded whole, then trimmed
            checkpoint = cast(Checkpoint, self.serde.loads_typed((kind, blob)))
            apart = named_blobs(checkpoint)
            held = _without(checkpoint["channel_values"], self.skipped)
            checkpoint = cast(Checkpoint, {**checkpoint, "channel_values": held})
        else:
            found = shallow(blob)
            values = found.get("channel_values") or {}
            apart = named_blobs(found)
            found["channel_values"] = _without(values, self.skipped)
            self._left_out = (key, _only(values, self.skipped), _only(apart, self.skipped))
            encoded = ormsgpack.packb(found, default=packed_default, option=MSGPACK_OPTIONS)
            checkpoint = cast(Checkpoint, self.serde.loads_typed(("msgpack", encoded)))
        wanted = _without(apart, self.skipped)
        for channel, kind_, value in self._blob_rows(thread_id, namespace, wanted):
            checkpoint["channel_values"][channel] = self.serde.loads_typed((kind_, value))
        return checkpoint


def _only(values: Mapping[str, V], channels: Collection[str]) -> dict[str, V]:
    return {channel: value for channel, value in values.items() if channel in channels}


def _without(values: Mapping[str, V], channels: Collection[str]) -> dict[str, V]:
    return {channel: value for channel, value in values.items() if channel not in channels}


def _json(metadata: bytes | str | None) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(metadata)) if metadata is not None else {}
