"""What ``threads`` and ``status`` print, read without decoding a thread's large channels.

A thread's research bundle lists every source research read, and the handoff envelope
repeats them: both grow with the corpus (10,000 files: 8.5 MB of channel values a
checkpoint), and LangGraph's ``list`` and ``get_state`` decode all of it, so listing a
store holding one such thread took a minute. A listing reads instead:

- thread ids and checkpoint counts with one SQL query each, decoding no checkpoint;
- the latest checkpoint through :class:`GlanceSaver`, which hands LangGraph that checkpoint
  with the large channels left out, still encoded. ``get_state`` on a graph compiled with
  it gives ``next``, the interrupts, the metadata and the small channels as the full read
  does, since what runs next depends on channel versions, not on the values left out;
- the number of facts, counted in the stored bundle without building the bundle.

PostgreSQL, and SQLite since ``app.storage.backends.sqlite_saver``, keep each channel value in a
blob row of its own, so there the large values are simply not selected. An SQLite
checkpoint saved before that layout holds every channel inline; its row is unpacked only
to its top level, and the skipped channels are cut out before anything is decoded. Other
savers (``memory://``) are read whole: nothing of theirs outlives the process that wrote
it.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import closing
from typing import Any, TypeVar, cast

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    writes_sort_key,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import EXT_PYDANTIC_V2
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from app.storage.backends.sqlite_saver_sql import BLOBS_PRESENT, blob_values, named_blobs
from app.storage.backends.sqlite_steps import Steps, run
from app.storage.backends.sqlite_values import resolved
from app.storage.checkpointing import SingleWriterSaver

_MSGPACK_OPTIONS = ormsgpack.OPT_NON_STR_KEYS
_LeftOut = tuple[tuple[str, str, str], dict[str, Any], dict[str, str]]
V = TypeVar("V")
_CHANNEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_:.-]*$")
Rows = list[tuple[Any, ...]]
"""Rows of a query, as tuples (named here: the saver's ``list`` method shadows the type)."""


class _Packed:
    """A msgpack extension value (a model, a date) kept as its bytes: not decoded.

    A plain class, not a dataclass: ormsgpack encodes dataclasses as maps by itself, and
    this must go back through ``_packed_default`` as the extension it was.
    """

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code = code
        self.data = data


def _keep_packed(code: int, data: bytes) -> _Packed:
    return _Packed(code, data)


def _packed_default(value: object) -> ormsgpack.Ext:
    if isinstance(value, _Packed):
        return ormsgpack.Ext(value.code, value.data)
    raise TypeError(f"cannot re-encode {type(value).__name__}")


def _shallow(blob: bytes) -> dict[str, Any]:
    """A msgpack checkpoint's structure, each model in it still encoded (cheap: no models)."""
    return cast(
        dict[str, Any], ormsgpack.unpackb(blob, ext_hook=_keep_packed, option=_MSGPACK_OPTIONS)
    )


_FIXED = {0xC0: 0, 0xC2: 0, 0xC3: 0, 0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}
_FIXED |= {0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8, 0xD4: 2, 0xD5: 3, 0xD6: 5, 0xD7: 9, 0xD8: 17}
"""msgpack types of a fixed size after their type byte (nil, bools, numbers, fixext)."""
_SIZED = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}
"""bin and str: a length of this many bytes, then the bytes."""
_EXT = {0xC7: 1, 0xC8: 2, 0xC9: 4}
"""ext: a length of this many bytes, a type byte, then the bytes."""
_CONTAINERS = {0xDC: (2, 1), 0xDD: (4, 1), 0xDE: (2, 2), 0xDF: (4, 2)}
"""array and map: a count of this many bytes; each counted item is this many values."""


def _header(data: bytes, at: int) -> tuple[int, int, int]:
    """(type byte, count or length, where the content starts) of the value at ``at``."""
    byte = data[at]
    if byte <= 0x7F or byte >= 0xE0:  # fixint
        return byte, 0, at + 1
    if 0x80 <= byte <= 0x8F:  # fixmap
        return 0x80, (byte & 0x0F) * 2, at + 1
    if 0x90 <= byte <= 0x9F:  # fixarray
        return 0x90, byte & 0x0F, at + 1
    if 0xA0 <= byte <= 0xBF:  # fixstr
        return 0xA0, byte & 0x1F, at + 1
    if byte in _CONTAINERS:
        width, per_item = _CONTAINERS[byte]
        return byte, int.from_bytes(data[at + 1 : at + 1 + width], "big") * per_item, at + 1 + width
    if byte in _SIZED:
        width = _SIZED[byte]
        return byte, int.from_bytes(data[at + 1 : at + 1 + width], "big"), at + 1 + width
    if byte in _EXT:
        width = _EXT[byte]
        return byte, int.from_bytes(data[at + 1 : at + 1 + width], "big") + 1, at + 1 + width
    if byte in _FIXED:
        return byte, _FIXED[byte], at + 1
    raise ValueError(f"not msgpack: type byte 0x{byte:02x} at {at}")


def _skip(data: bytes, at: int) -> int:
    """Where the msgpack value at ``at`` ends (containers walked, nothing decoded)."""
    kind, count, start = _header(data, at)
    if kind in (0x80, 0x90) or kind in _CONTAINERS:
        for _ in range(count):
            start = _skip(data, start)
        return start
    return start + count


def _list_length(payload: bytes, field: str) -> int | None:
    """Length of list ``field`` in a stored model's payload, reading no item of it.

    The payload is msgpack ``[module, class, {field: value, ...}, method]``; the fields
    before ``field`` are stepped over (for a research bundle: four short strings), so the
    count costs the same for 10 facts as for 10,000 sources. None if it is not that shape.
    """
    kind, count, at = _header(payload, 0)
    if kind not in (0x90, 0xDC, 0xDD) or count < 3:
        return None
    at = _skip(payload, _skip(payload, at))  # module, class
    kind, count, at = _header(payload, at)
    if kind not in (0x80, 0xDE, 0xDF):
        return None
    wanted = field.encode()
    for _ in range(count // 2):
        key_kind, length, key_start = _header(payload, at)
        key = (
            payload[key_start : key_start + length]
            if key_kind in (0xA0, 0xD9, 0xDA, 0xDB)
            else None
        )
        at = _skip(payload, at)
        if key == wanted:
            kind, items, _ = _header(payload, at)
            return items if kind in (0x90, 0xDC, 0xDD) else None
        at = _skip(payload, at)
    return None


def _count_field(value: object, field: str) -> int | None:
    """Items in list ``field`` of a stored model, without building the model.

    A model is stored as an extension whose payload is ``(module, class, fields, method)``;
    the list's length is read from its header (:func:`_list_length`), or, for a payload of
    another shape, from its fields read as plain msgpack (no model built, no validation).
    """
    fields: object = value
    if isinstance(value, _Packed):
        if value.code != EXT_PYDANTIC_V2:
            return None
        length = _list_length(value.data, field)
        if length is not None:
            return length
        unpacked = ormsgpack.unpackb(value.data, ext_hook=_keep_packed, option=_MSGPACK_OPTIONS)
        fields = unpacked[2] if isinstance(unpacked, list | tuple) and len(unpacked) > 2 else None
    elif isinstance(value, BaseModel):
        fields = value.__dict__
    items = fields.get(field) if isinstance(fields, dict) else None
    return len(items) if isinstance(items, list | tuple) else None


class GlanceSaver(BaseCheckpointSaver[str]):
    """A read-only saver whose checkpoints leave the ``skipped`` channels out, undecoded.

    Only ``get_tuple`` is served (all ``get_state`` needs); it never writes. ``inner`` is
    the Workflow's saver; its serializer decodes what is read.
    """

    def __init__(self, inner: BaseCheckpointSaver[str], skipped: Collection[str]) -> None:
        bare = inner.inner if isinstance(inner, SingleWriterSaver) else inner
        super().__init__(serde=bare.serde)
        for channel in skipped:
            if not _CHANNEL_NAME.match(channel):
                raise ValueError(f"channel name {channel!r} cannot be left out of a query")
        self.inner = bare
        self.skipped = frozenset(skipped)
        self._postgres: BaseCheckpointSaver[str] | None = None
        self._sqlite_task_path: bool | None = None
        self._sqlite_blobs = False
        self._left_out: _LeftOut | None = None
        """What the last SQLite read left out, by the checkpoint it is of: the values its
        row held, still encoded, and the blob keys of the others. ``count_items`` on that
        checkpoint (what ``status`` asks next) reads no checkpoint row again."""

    # -- what a listing asks -----------------------------------------------------------

    def thread_ids(self) -> list[str]:
        """Every thread id with a checkpoint, sorted; no checkpoint is decoded."""
        if isinstance(self.inner, SqliteSaver):
            rows = self._sqlite("SELECT DISTINCT thread_id FROM checkpoints", ())
        elif self._is_postgres():
            rows = self._postgres_rows("SELECT DISTINCT thread_id FROM checkpoints", ())
        elif isinstance(self.inner, InMemorySaver):
            return sorted(str(thread) for thread in self.inner.storage)
        else:  # a saver this module does not know: its own listing, which decodes
            return sorted(
                {str(item.config["configurable"]["thread_id"]) for item in self.inner.list(None)}
            )
        return sorted(str(row[0]) for row in rows)

    def checkpoint_count(self, thread_id: str) -> int:
        """How many checkpoints the thread has, in every namespace; none is decoded."""
        query = "SELECT COUNT(*) FROM checkpoints WHERE thread_id = "
        if isinstance(self.inner, SqliteSaver):
            return int(self._sqlite(query + "?", (thread_id,))[0][0])
        if self._is_postgres():
            return int(self._postgres_rows(query + "%s", (thread_id,))[0][0])
        if isinstance(self.inner, InMemorySaver):
            return sum(len(found) for found in self.inner.storage.get(thread_id, {}).values())
        return sum(1 for _ in self.inner.list({"configurable": {"thread_id": thread_id}}))

    def count_items(self, config: RunnableConfig, channel: str, field: str) -> int | None:
        """Items in list ``field`` of the model in ``channel``, without building the model.

        The checkpoint is the one ``config`` names (the latest without an id); None when it
        holds no such value.
        """
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        checkpoint_id = get_checkpoint_id(config)
        if isinstance(self.inner, SqliteSaver):
            key = (thread_id, namespace, checkpoint_id or "")
            if self._left_out is not None and self._left_out[0] == key:
                _, held, apart = self._left_out
            else:
                row = self._sqlite_checkpoint(thread_id, namespace, checkpoint_id)
                if row is None or row[2] != "msgpack":
                    return None if row is None else self._count_decoded(config, channel, field)
                shallow = _shallow(row[3])
                held = shallow.get("channel_values") or {}
                apart = named_blobs(shallow)
            if channel in held or channel not in apart:
                return _count_field(held.get(channel), field)
            return self._sqlite_blob_count(thread_id, namespace, channel, apart[channel], field)
        if self._is_postgres():
            return self._postgres_count(thread_id, namespace, checkpoint_id, channel, field)
        return self._count_decoded(config, channel, field)

    # -- BaseCheckpointSaver -------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the latest without an id), skipped channels out."""
        if isinstance(self.inner, SqliteSaver):
            return self._sqlite_tuple(config)
        if self._is_postgres():
            return self._selecting_postgres().get_tuple(config)
        found = self.inner.get_tuple(config)
        if found is None:
            return None
        values = {
            channel: value
            for channel, value in found.checkpoint["channel_values"].items()
            if channel not in self.skipped
        }
        checkpoint = cast(Checkpoint, {**found.checkpoint, "channel_values": values})
        writes = [write for write in found.pending_writes or [] if write[1] not in self.skipped]
        return found._replace(checkpoint=checkpoint, pending_writes=writes)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Skipped channels empty, as left out; the others as the inner saver has them.

        LangGraph asks this for an aggregate channel whose value a checkpoint does not hold
        (``branches``, always skipped): answered by the default walk, every ancestor would
        be read through :meth:`get_tuple`, which leaves the channel out of each of them
        too, so a glance read the whole thread.
        """
        wanted = [channel for channel in channels if channel not in self.skipped]
        found = self.inner.get_delta_channel_history(config=config, channels=wanted)
        return {channel: found.get(channel) or {"writes": []} for channel in channels}

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Not served: a listing asks :meth:`thread_ids` and :meth:`checkpoint_count`."""
        raise NotImplementedError("GlanceSaver lists nothing: use thread_ids()/checkpoint_count()")

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Refused: this saver only reads; run and resume through the Workflow's saver."""
        raise NotImplementedError("GlanceSaver is read-only: write through the Workflow's saver")

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Refused: this saver only reads; run and resume through the Workflow's saver."""
        raise NotImplementedError("GlanceSaver is read-only: write through the Workflow's saver")

    # -- SQLite: values in blob rows, or (saved before that layout) inline ----------------

    def _sqlite(self, query: str, args: Sequence[Any]) -> Rows:
        assert isinstance(self.inner, SqliteSaver)
        with self.inner.lock:
            return [tuple(row) for row in self.inner.conn.execute(query, tuple(args))]

    def _sqlite_blob_rows(self, thread_id: str, namespace: str, keys: Mapping[str, str]) -> Rows:
        """(channel, type, bytes) of the values stored under ``keys``; none in a file without."""
        if not keys:
            return []
        if not self._sqlite_blobs:
            self._sqlite_blobs = bool(self._sqlite(BLOBS_PRESENT, ()))
            if not self._sqlite_blobs:
                return []
        return self._sqlite_steps(blob_values(thread_id, namespace, keys))

    def _sqlite_steps(self, steps: Steps[V]) -> V:
        assert isinstance(self.inner, SqliteSaver)
        with self.inner.lock, closing(self.inner.conn.cursor()) as cursor:
            return run(cursor, steps)

    def _sqlite_blob_count(
        self, thread_id: str, namespace: str, channel: str, version: str, field: str
    ) -> int | None:
        """Items in list ``field`` of the model in one blob row, without building the model."""
        for _, kind, blob in self._sqlite_blob_rows(thread_id, namespace, {channel: version}):
            if kind != "msgpack":
                return _count_field(self.serde.loads_typed((kind, blob)), field)
            return _count_field(_shallow_value(blob), field)
        return None

    def _sqlite_checkpoint(
        self, thread_id: str, namespace: str, checkpoint_id: str | None
    ) -> tuple[Any, ...] | None:
        columns = "checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
        where = "WHERE thread_id = ? AND checkpoint_ns = ?"
        if checkpoint_id:
            rows = self._sqlite(
                f"SELECT {columns} FROM checkpoints {where} AND checkpoint_id = ?",
                (thread_id, namespace, checkpoint_id),
            )
        else:
            rows = self._sqlite(
                f"SELECT {columns} FROM checkpoints {where} ORDER BY checkpoint_id DESC LIMIT 1",
                (thread_id, namespace),
            )
        return tuple(rows[0]) if rows else None

    def _sqlite_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        row = self._sqlite_checkpoint(thread_id, namespace, get_checkpoint_id(config))
        if row is None:
            return None
        checkpoint_id, parent_id, kind, blob, metadata = row
        if self._sqlite_task_path is None:
            columns = {column[1] for column in self._sqlite("PRAGMA table_info(writes)", ())}
            self._sqlite_task_path = "task_path" in columns
        path = "task_path" if self._sqlite_task_path else "''"
        marks = ", ".join("?" for _ in self.skipped) or "NULL"
        stored = self._sqlite(
            f"SELECT task_id, channel, type, value, {path}, idx FROM writes WHERE thread_id = ? "
            f"AND checkpoint_ns = ? AND checkpoint_id = ? AND channel NOT IN ({marks})",
            (thread_id, namespace, checkpoint_id, *sorted(self.skipped)),
        )
        writes = self._sqlite_steps(resolved(thread_id, stored, at=2))
        pending: builtins.list[PendingWrite] = [
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

    def _selected(self, kind: str, blob: bytes, key: tuple[str, str, str]) -> Checkpoint:
        """The checkpoint with the skipped channels left out before anything is decoded.

        Values the row holds are cut out of its msgpack; of the values in blob rows, only
        the channels not skipped are read.
        """
        thread_id, namespace, _ = key
        if kind != "msgpack":  # another encoding: decoded whole, then trimmed
            checkpoint = cast(Checkpoint, self.serde.loads_typed((kind, blob)))
            apart = named_blobs(checkpoint)
            held = _without(checkpoint["channel_values"], self.skipped)
            checkpoint = cast(Checkpoint, {**checkpoint, "channel_values": held})
        else:
            shallow = _shallow(blob)
            values = shallow.get("channel_values") or {}
            apart = named_blobs(shallow)
            shallow["channel_values"] = _without(values, self.skipped)
            self._left_out = (key, _only(values, self.skipped), _only(apart, self.skipped))
            encoded = ormsgpack.packb(shallow, default=_packed_default, option=_MSGPACK_OPTIONS)
            checkpoint = cast(Checkpoint, self.serde.loads_typed(("msgpack", encoded)))
        wanted = _without(apart, self.skipped)
        for channel, kind_, value in self._sqlite_blob_rows(thread_id, namespace, wanted):
            checkpoint["channel_values"][channel] = self.serde.loads_typed((kind_, value))
        return checkpoint

    def _count_decoded(self, config: RunnableConfig, channel: str, field: str) -> int | None:
        found = self.inner.get_tuple(config)
        if found is None:
            return None
        return _count_field(found.checkpoint["channel_values"].get(channel), field)

    # -- PostgreSQL: one row per channel value ---------------------------------------------

    def _is_postgres(self) -> bool:
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError:  # the PostgreSQL extra is not installed: no such saver exists
            return False
        return isinstance(self.inner, PostgresSaver)

    def _selecting_postgres(self) -> BaseCheckpointSaver[str]:
        """A PostgresSaver on the same connections whose query leaves the skipped out."""
        if self._postgres is None:
            from langgraph.checkpoint.postgres import PostgresSaver

            assert isinstance(self.inner, PostgresSaver)
            saver = PostgresSaver(self.inner.conn, serde=self.serde)
            saver.SELECT_SQL = _leave_out(PostgresSaver.SELECT_SQL, self.skipped)
            self._postgres = saver
        return self._postgres

    def _postgres_rows(self, query: str, args: Sequence[Any]) -> Rows:
        """Rows of a query on the saver's own connections (a pool's, or its one connection)."""
        from psycopg.rows import tuple_row
        from psycopg_pool import ConnectionPool

        connection = getattr(self.inner, "conn")  # noqa: B009  # PostgresSaver's, untyped here
        if isinstance(connection, ConnectionPool):
            with connection.connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
                return list(cursor.execute(query, tuple(args)).fetchall())
        with getattr(self.inner, "lock"), connection.cursor(row_factory=tuple_row) as cursor:  # noqa: B009
            return list(cursor.execute(query, tuple(args)).fetchall())

    def _postgres_count(
        self,
        thread_id: str,
        namespace: str,
        checkpoint_id: str | None,
        channel: str,
        field: str,
    ) -> int | None:
        where = "c.thread_id = %s AND c.checkpoint_ns = %s"
        args: list[Any] = [channel, thread_id, namespace]
        if checkpoint_id:
            where += " AND c.checkpoint_id = %s"
            args.append(checkpoint_id)
        args.append(channel)
        rows = self._postgres_rows(
            "SELECT b.type, b.blob FROM (SELECT thread_id, checkpoint_ns, "
            "checkpoint -> 'channel_versions' ->> %s AS version, checkpoint_id "
            f"FROM checkpoints c WHERE {where} ORDER BY checkpoint_id DESC LIMIT 1) AS c "
            "JOIN checkpoint_blobs b ON b.thread_id = c.thread_id "
            "AND b.checkpoint_ns = c.checkpoint_ns AND b.version = c.version "
            "AND b.channel = %s",
            args,
        )
        if not rows or rows[0][0] != "msgpack" or rows[0][1] is None:
            return None
        return _count_field(_shallow_value(bytes(rows[0][1])), field)


def _only(values: Mapping[str, V], channels: Collection[str]) -> dict[str, V]:
    return {channel: value for channel, value in values.items() if channel in channels}


def _without(values: Mapping[str, V], channels: Collection[str]) -> dict[str, V]:
    return {channel: value for channel, value in values.items() if channel not in channels}


def _shallow_value(blob: bytes) -> object:
    """One stored value, each model in it still encoded."""
    return ormsgpack.unpackb(blob, ext_hook=_keep_packed, option=_MSGPACK_OPTIONS)


def _json(metadata: bytes | str | None) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(metadata)) if metadata is not None else {}


def _leave_out(select_sql: str, skipped: frozenset[str]) -> str:
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
                "app/storage/thread_reads.py for this langgraph-checkpoint-postgres release"
            )
        select_sql = select_sql.replace(anchor, f"{anchor}\n            {condition}")
    return select_sql
