"""Each serialized value stored once per thread, however many rows carry it.

A value a node returns is stored as its task's write (what LangGraph replays when a step
is resumed) and again as the channel's value at its new version: for a LastValue channel,
the very same bytes twice. So a ``writes`` row and a ``checkpoint_blobs`` row whose value
is large enough keep only the sha256 of its type and bytes, under the type :data:`SHARED`,
and the value itself is stored once in ``checkpoint_values`` under the thread and that
digest.

Values are shared within a thread, not across threads: deleting a thread deletes its
values by its id, as it deletes its other rows, and no writer has to count another
thread's references. A write row replaced or ignored on a retry may leave its value
unreferenced until the thread is deleted.

Rows saved before this layout hold their values inline, under their serializer's type,
and read as they always did: only a row of type :data:`SHARED` is looked up here.

A value is stored compressed when that makes it smaller (:func:`packed`), as the checkpoint
rows are: PostgreSQL compresses every value of more than 2 KB itself (TOAST), SQLite stores
what it is given. Contracts in msgpack compress three to five times (their field names and
the envelope items each node restates), and a log that grows by one entry a revision adds
a compressed entry's bytes, not the whole log's. A value stored before, or one sealed under
an encryption key (random bytes do not compress), is stored and read as it is.
"""

from __future__ import annotations

import zlib
from hashlib import sha256

from app.storage.backends.sqlite_steps import KEYS_PER_QUERY, Rows, Sql, Steps

VALUES_TABLE = "checkpoint_values"
CREATE_VALUES = f"""
CREATE TABLE IF NOT EXISTS {VALUES_TABLE} (
    thread_id TEXT NOT NULL,
    digest BLOB NOT NULL,
    type TEXT NOT NULL,
    value BLOB,
    PRIMARY KEY (thread_id, digest)
)"""
INSERT_VALUE = f"INSERT OR IGNORE INTO {VALUES_TABLE} VALUES (?, ?, ?, ?)"
SHARED = "sha256"
"""The type of a row whose value column holds a digest; no serializer names a type so."""
SHARED_FROM = 128
"""Bytes from which a value is shared. A reference costs its type and 32-byte digest in
each row, and the value's own row its thread id, digest and type once: for a value stored
twice that is about 120 bytes, so a shorter one stays inline."""
PACKED = "zlib:"
"""Before the type of a value stored compressed; no serializer names a type so."""
WINDOW_BITS = 13
"""zlib's window: 8 KiB, more than a contract's repeats are apart, and set up in a fifth of
the time of the default 32 KiB (a run compresses a few dozen values of a few KB)."""


def packed(kind: str, data: bytes) -> tuple[str, bytes]:
    """The type and bytes the file keeps for a serialized value: compressed, when smaller."""
    smaller = zlib.compress(data, wbits=WINDOW_BITS)
    return (PACKED + kind, smaller) if len(smaller) < len(data) else (kind, data)


def unpacked(kind: str, data: bytes) -> tuple[str, bytes]:
    """The serializer's type and bytes of a value the file keeps (:func:`packed`)."""
    if kind.startswith(PACKED):
        return kind.removeprefix(PACKED), zlib.decompress(data)
    return kind, data


class Sharing:
    """The values of one thread's rows being built, each to be stored once."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.rows: dict[bytes, tuple[str, bytes, str, bytes]] = {}

    def refer(self, kind: str, data: bytes) -> tuple[str, bytes]:
        """What a row stores for the value: the value itself if short, else its digest."""
        if len(data) < SHARED_FROM:
            return kind, data
        digest = sha256(kind.encode() + b"\0" + data).digest()
        if digest not in self.rows:
            self.rows[digest] = (self.thread_id, digest, *packed(kind, data))
        return SHARED, digest

    def store(self) -> Steps[None]:
        """Store the values referred to, those the thread holds already left as they are."""
        if self.rows:
            yield Sql(INSERT_VALUE, list(self.rows.values()), many=True)


def resolved(thread_id: str, rows: Rows, at: int) -> Steps[Rows]:
    """``rows``, each shared value read in: column ``at`` is a type, the next its value.

    A digest the thread has no value for is a damaged file, and raises.
    """
    digests = sorted({bytes(row[at + 1]) for row in rows if row[at] == SHARED})
    found: dict[bytes, tuple[str, bytes]] = {}
    for start in range(0, len(digests), KEYS_PER_QUERY):
        chunk = digests[start : start + KEYS_PER_QUERY]
        marks = ", ".join("?" for _ in chunk)
        stored = yield Sql(
            f"SELECT digest, type, value FROM {VALUES_TABLE} "
            f"WHERE thread_id = ? AND digest IN ({marks})",
            (thread_id, *chunk),
        )
        found.update((bytes(digest), unpacked(kind, value)) for digest, kind, value in stored)
    missing = [digest.hex() for digest in digests if digest not in found]
    if missing:
        raise LookupError(f"thread {thread_id!r} refers to values it does not hold: {missing}")
    return [
        (*row[:at], *found[bytes(row[at + 1])], *row[at + 2 :]) if row[at] == SHARED else row
        for row in rows
    ]
