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

Most of what a channel's new value holds, its last one held: a handoff envelope restates
the objective, the decisions, the sources' and artifacts' hashes (which do not compress),
changing a few fields. So a value may be stored as its difference from a *keyframe*, a
value of the same channel in the same thread stored whole (:class:`Keyframes`): deflated
with the keyframe as zlib's preset dictionary, under the type :data:`DELTA`, the
keyframe's digest first. A keyframe is never itself a difference, so a value is read with
at most one other; a difference is kept only when it is at most half the value's own
compressed bytes, else the value is stored whole and becomes the channel's keyframe.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
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


DELTA = "zdict:"
"""Before the type of a value stored as its difference from a keyframe; no serializer names
a type so. Its bytes are the keyframe's 32-byte digest, then the deflated difference."""
DICTIONARY_BITS = 15
"""zlib's largest window: a difference refers back up to 32 KiB, the keyframe's last bytes."""
DIGEST_BYTES = 32
KEPT_THREADS = 32
"""Threads whose keyframes a saver keeps in memory (at most 32 KiB a channel); a thread
not among them stores its next value of each channel whole."""


def packed(kind: str, data: bytes) -> tuple[str, bytes]:
    """The type and bytes the file keeps for a serialized value: compressed, when smaller."""
    smaller = zlib.compress(data, wbits=WINDOW_BITS)
    return (PACKED + kind, smaller) if len(smaller) < len(data) else (kind, data)


def unpacked(kind: str, data: bytes) -> tuple[str, bytes]:
    """The serializer's type and bytes of a value the file keeps (:func:`packed`)."""
    if kind.startswith(PACKED):
        return kind.removeprefix(PACKED), zlib.decompress(data)
    return kind, data


def against(
    kind: str, data: bytes, keyframe: tuple[bytes, bytes] | None
) -> tuple[tuple[str, bytes], bool]:
    """How a value is stored, and whether whole (so it may become its keyframe).

    ``keyframe``: the reference that names it and its bytes, or None. The value is stored
    as its difference from the keyframe when that is at most half its own compressed
    bytes; else whole (:func:`packed`).
    """
    if keyframe is not None:
        reference, dictionary = keyframe
        compressor = zlib.compressobj(wbits=DICTIONARY_BITS, zdict=dictionary)
        difference = reference + compressor.compress(data) + compressor.flush()
        if len(difference) * 8 <= len(data):  # surely at most half of it compressed
            return (DELTA + kind, difference), False
        whole = packed(kind, data)
        if len(difference) * 2 <= len(whole[1]):
            return (DELTA + kind, difference), False
        return whole, True
    return packed(kind, data), True


def restored(kind: str, difference: bytes, keyframe: bytes) -> tuple[str, bytes]:
    """The serializer's type and bytes of a value stored by :func:`against`.

    ``difference``: its bytes after the reference; ``keyframe``: the keyframe, unpacked.
    """
    decompressor = zlib.decompressobj(
        wbits=DICTIONARY_BITS, zdict=keyframe[-(1 << DICTIONARY_BITS) :]
    )
    return kind.removeprefix(DELTA), decompressor.decompress(difference) + decompressor.flush()


def sealed(kind: str) -> bool:
    """Whether a serializer's type is of a value sealed under a key (``msgpack+aesgcm``).

    Such bytes are random: no dictionary helps compress them.
    """
    return "+" in kind


class Keyframes:
    """Of each channel of recent threads, the digest and last 32 KiB of a value stored whole.

    Only a hint: a keyframe is used as a dictionary once the write's own transaction has
    found its row whole in the thread (:meth:`Sharing.store`), so a keyframe rolled back,
    deleted with its thread, or stored by another process as a difference is not used.
    """

    def __init__(self, threads: int = KEPT_THREADS) -> None:
        self._threads: OrderedDict[str, dict[str, tuple[bytes, bytes]]] = OrderedDict()
        self._size = threads
        self._lock = threading.Lock()

    def of(self, thread_id: str, channel: str) -> tuple[bytes, bytes] | None:
        """The channel's keyframe: its digest and dictionary."""
        with self._lock:
            return self._threads.get(thread_id, {}).get(channel)

    def keep(
        self, thread_id: str, channel: str, digest: bytes, data: bytes, *, replace: bool
    ) -> None:
        """Remember a value stored whole; ``replace``: over the channel's keyframe if any."""
        with self._lock:
            channels = self._threads.setdefault(thread_id, {})
            self._threads.move_to_end(thread_id)
            if replace or channel not in channels:
                channels[channel] = (digest, data[-(1 << DICTIONARY_BITS) :])
            while len(self._threads) > self._size:
                self._threads.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        """Drop a deleted thread's keyframes."""
        with self._lock:
            self._threads.pop(thread_id, None)


class Sharing:
    """The values of one thread's rows being built, each to be stored once."""

    def __init__(self, thread_id: str, keyframes: Keyframes | None = None) -> None:
        self.thread_id = thread_id
        self.keyframes = keyframes
        self.rows: dict[bytes, tuple[str, bytes, str | None]] = {}

    def refer(self, kind: str, data: bytes, channel: str | None = None) -> tuple[str, bytes]:
        """What a row stores for the value: the value itself if short, else its digest.

        ``channel``: the channel the value is of, whose keyframe it may be stored against.
        """
        if len(data) < SHARED_FROM:
            return kind, data
        digest = sha256(kind.encode() + b"\0" + data).digest()
        if digest not in self.rows:
            self.rows[digest] = (kind, data, channel)
        return SHARED, digest

    def store(self) -> Steps[None]:
        """Store the values referred to, those the thread holds already left as they are.

        Each is compressed only if the thread lacks it, against its channel's keyframe when
        that is found stored whole in this same transaction.
        """
        if not self.rows:
            return
        keyed = {
            digest: keyframes.of(self.thread_id, channel)
            for digest, (kind, _, channel) in self.rows.items()
            if (keyframes := self.keyframes) is not None
            and channel is not None
            and not sealed(kind)
        }
        bases = {keyframe[0] for keyframe in keyed.values() if keyframe is not None}
        found = yield from _selected(self.thread_id, sorted({*self.rows, *bases}), "digest, type")
        present = {bytes(digest) for digest, _ in found}
        whole = {bytes(digest) for digest, kind in found if not str(kind).startswith(DELTA)}
        rows = []
        for digest, (kind, data, channel) in self.rows.items():
            if digest in present:
                continue
            keyframe = keyed.get(digest)
            usable = keyframe is not None and keyframe[0] in whole and keyframe[0] != digest
            stored, is_whole = against(kind, data, keyframe if usable else None)
            if is_whole and digest in keyed and self.keyframes is not None and channel:
                self.keyframes.keep(self.thread_id, channel, digest, data, replace=True)
            rows.append((self.thread_id, digest, *stored))
        if rows:
            yield Sql(INSERT_VALUE, rows, many=True)


def _selected(thread_id: str, digests: list[bytes], columns: str) -> Steps[Rows]:
    """``columns`` of the rows of these values the thread holds."""
    found: Rows = []
    for start in range(0, len(digests), KEYS_PER_QUERY):
        chunk = digests[start : start + KEYS_PER_QUERY]
        marks = ", ".join("?" for _ in chunk)
        found += yield Sql(
            f"SELECT {columns} FROM {VALUES_TABLE} WHERE thread_id = ? AND digest IN ({marks})",
            (thread_id, *chunk),
        )
    return found


def _stored(thread_id: str, digests: list[bytes]) -> Steps[dict[bytes, tuple[str, bytes]]]:
    """The stored type and bytes of each of these values the thread holds."""
    found = yield from _selected(thread_id, digests, "digest, type, value")
    return {bytes(digest): (str(kind), bytes(value)) for digest, kind, value in found}


def resolved(
    thread_id: str, rows: Rows, at: int, keyframes: Keyframes | None = None
) -> Steps[Rows]:
    """``rows``, each shared value read in: column ``at`` is a type, the next its value.

    A value stored as a difference is read with its keyframe. With ``keyframes``, column 0
    is the channel, and the values read become their channels' keyframes where none is
    kept yet. A digest the thread has no value for is a damaged file, and raises.
    """
    digests = sorted({bytes(row[at + 1]) for row in rows if row[at] == SHARED})
    stored = yield from _stored(thread_id, digests)
    bases = sorted(
        {value[:DIGEST_BYTES] for kind, value in stored.values() if kind.startswith(DELTA)}
        - set(stored)
    )
    stored.update((yield from _stored(thread_id, bases)))
    missing = [digest.hex() for digest in [*digests, *bases] if digest not in stored]
    if missing:
        raise LookupError(f"thread {thread_id!r} refers to values it does not hold: {missing}")
    found: dict[bytes, tuple[str, bytes]] = {}
    whole: dict[bytes, bytes] = {}  # the keyframe each value was read with, or itself

    def read(digest: bytes) -> tuple[str, bytes]:
        if digest not in found:
            kind, value = stored[digest]
            if kind.startswith(DELTA):
                base = value[:DIGEST_BYTES]
                base_kind, base_value = stored[base]
                if base_kind.startswith(DELTA):
                    raise LookupError(
                        f"thread {thread_id!r} holds value {digest.hex()} as a difference from "
                        f"{base.hex()}, which is a difference itself: the file is damaged"
                    )
                _, keyframe = unpacked(base_kind, base_value)
                found[digest] = restored(kind, value[DIGEST_BYTES:], keyframe)
                whole[digest] = base
            else:
                found[digest] = unpacked(kind, value)
                whole[digest] = digest
        return found[digest]

    resolved_rows = [
        (*row[:at], *read(bytes(row[at + 1])), *row[at + 2 :]) if row[at] == SHARED else row
        for row in rows
    ]
    if keyframes is not None:
        for row in rows:
            if row[at] == SHARED and not sealed(found[bytes(row[at + 1])][0]):
                base = whole[bytes(row[at + 1])]
                keyframes.keep(thread_id, str(row[0]), base, read(base)[1], replace=False)
    return resolved_rows
