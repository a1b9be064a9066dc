"""Stored msgpack read without building what it holds: a checkpoint's top level, a list's length.

A checkpoint stores each model as a msgpack extension. Unpacked with :func:`shallow`, every
model stays an undecoded :class:`Packed`, so a checkpoint whose research bundle lists
10,000 sources costs what its small channels cost; :func:`count_field` then counts a list in
such a model by reading the list's header only.
"""

from __future__ import annotations

from typing import Any, cast

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import EXT_PYDANTIC_V2
from pydantic import BaseModel

MSGPACK_OPTIONS = ormsgpack.OPT_NON_STR_KEYS


class Packed:
    """A msgpack extension value (a model, a date) kept as its bytes: not decoded.

    A plain class, not a dataclass: ormsgpack encodes dataclasses as maps by itself, and
    this must go back through ``packed_default`` as the extension it was.
    """

    __slots__ = ("code", "data")

    def __init__(self, code: int, data: bytes) -> None:
        self.code = code
        self.data = data


def _keep_packed(code: int, data: bytes) -> Packed:
    return Packed(code, data)


def packed_default(value: object) -> ormsgpack.Ext:
    """``default`` for ``ormsgpack.packb``: a :class:`Packed` goes back as the extension it was."""
    if isinstance(value, Packed):
        return ormsgpack.Ext(value.code, value.data)
    raise TypeError(f"cannot re-encode {type(value).__name__}")


def shallow_value(blob: bytes) -> object:
    """One stored value, each model in it still encoded."""
    return ormsgpack.unpackb(blob, ext_hook=_keep_packed, option=MSGPACK_OPTIONS)


def shallow(blob: bytes) -> dict[str, Any]:
    """A msgpack checkpoint's structure, each model in it still encoded (cheap: no models)."""
    return cast(dict[str, Any], shallow_value(blob))


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


def list_length(payload: bytes, field: str) -> int | None:
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


def count_field(value: object, field: str) -> int | None:
    """Items in list ``field`` of a stored model, without building the model.

    A model is stored as an extension whose payload is ``(module, class, fields, method)``;
    the list's length is read from its header (:func:`list_length`), or, for a payload of
    another shape, from its fields read as plain msgpack (no model built, no validation).
    """
    fields: object = value
    if isinstance(value, Packed):
        if value.code != EXT_PYDANTIC_V2:
            return None
        length = list_length(value.data, field)
        if length is not None:
            return length
        unpacked = shallow_value(value.data)
        fields = unpacked[2] if isinstance(unpacked, list | tuple) and len(unpacked) > 2 else None
    elif isinstance(value, BaseModel):
        fields = value.__dict__
    items = fields.get(field) if isinstance(fields, dict) else None
    return len(items) if isinstance(items, list | tuple) else None


def count_decoded(
    saver: BaseCheckpointSaver[str], config: RunnableConfig, channel: str, field: str
) -> int | None:
    """:func:`count_field` on the checkpoint ``saver`` decodes whole: for what no glance reads."""
    found = saver.get_tuple(config)
    if found is None:
        return None
    return count_field(found.checkpoint["channel_values"].get(channel), field)
