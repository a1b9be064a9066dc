"""Encryption at rest: checkpoints, artifact blobs and the ledger's payloads under AES-GCM.

``HANDOFF_ENCRYPTION_KEY`` (base64 of 32 random bytes) turns it on. Every value is sealed
under that key with a fresh 96-bit nonce and carries the key's id (8 bytes of a hash of the
key, which tells nothing of the key), so a value written under a key that was rotated out
is still read when that key is listed in ``HANDOFF_ENCRYPTION_OLD_KEYS`` (comma-separated).
New values are always written under ``HANDOFF_ENCRYPTION_KEY``.

What is sealed, and where it is unsealed:

* checkpoints and their writes: LangGraph's ``EncryptedSerializer`` around the project's
  serializer, with :class:`AesGcmCipher` (``app.storage.serde``);
* artifact blobs (folder and PostgreSQL stores): the bytes stored are sealed; an artifact's
  sha256 stays the hash of its plain bytes, so provenance and tamper checks hold;
* the ledger's payloads (a node's stored update, a write call's effect, an attempt's
  record): sealed text;
* a worker fleet's queued jobs (the task, a decision): sealed in the job's arguments.

The keys a database was written under are recorded in it (``handoff_encryption_keys``: key
ids only). A backend is opened only if every recorded key is at hand: a database written
with encryption and opened without its key, or with another, is refused in one line (exit
code 2) before anything is read or written. Values stored before encryption was turned on
stay readable as they are.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from langgraph.checkpoint.serde.base import CipherProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from graphs.errors import IntegrityError, UsageError

KEY_VARIABLE = "HANDOFF_ENCRYPTION_KEY"
OLD_KEYS_VARIABLE = "HANDOFF_ENCRYPTION_OLD_KEYS"
CIPHER_NAME = "aesgcm"
"""The cipher's name in a checkpoint value's type (``msgpack+aesgcm``)."""

MAGIC = b"HFX1"
"""First bytes of a sealed blob; a blob without them was stored before encryption."""
TEXT_PREFIX = "hfx1:"
"""First characters of a sealed ledger text; the rest is the sealed bytes in base64."""

KEY_TABLE = "handoff_encryption_keys"
"""The table recording the ids of the keys a database was written under."""

_ID_BYTES = 8
_NONCE_BYTES = 12
_KEY_FORM = "base64 of 32 random bytes, e.g. from `openssl rand -base64 32`"


class EncryptionKeyError(UsageError):
    """A key that is malformed, missing or not the one the data was written under: exit 2."""


def new_key() -> str:
    """A fresh key in the form ``HANDOFF_ENCRYPTION_KEY`` takes."""
    return base64.b64encode(os.urandom(32)).decode("ascii")


def _parse_key(text: str, variable: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != 32:
        raise EncryptionKeyError(
            f"{variable}: not a key; expected {_KEY_FORM} (44 characters ending in '=')"
        )
    return key


def key_id(key: bytes) -> str:
    """The id recorded for a key: 16 hex digits of a hash of it (nothing of the key itself)."""
    return hashlib.sha256(b"handoff encryption key id\0" + key).hexdigest()[: _ID_BYTES * 2]


@dataclass(frozen=True)
class KeyRing:
    """The key new values are sealed under, and every key values are opened with."""

    current: bytes
    old: tuple[bytes, ...] = ()
    _ciphers: dict[bytes, AESGCM] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for key in (self.current, *self.old):
            self._ciphers.setdefault(bytes.fromhex(key_id(key)), AESGCM(key))

    def __repr__(self) -> str:  # never a key in a log or a traceback
        return f"KeyRing(current={self.current_id}, old={len(self.old)})"

    @property
    def current_id(self) -> str:
        """The id of the key new values are sealed under."""
        return key_id(self.current)

    @property
    def ids(self) -> frozenset[str]:
        """The ids of every key at hand."""
        return frozenset(ident.hex() for ident in self._ciphers)

    def seal(self, plain: bytes) -> bytes:
        """``plain`` sealed under the current key: key id, nonce, ciphertext and tag."""
        ident = bytes.fromhex(self.current_id)
        nonce = os.urandom(_NONCE_BYTES)
        return ident + nonce + self._ciphers[ident].encrypt(nonce, plain, None)

    def unseal(self, sealed: bytes) -> bytes:
        """The plain bytes; raises InvalidTag when they were changed (or are not sealed).

        A value sealed under a key not at hand raises :class:`EncryptionKeyError`.
        """
        ident = sealed[:_ID_BYTES]
        cipher = self._ciphers.get(ident)
        if cipher is None:
            raise missing_key_error([ident.hex()], "a stored value")
        nonce = sealed[_ID_BYTES : _ID_BYTES + _NONCE_BYTES]
        return cipher.decrypt(nonce, sealed[_ID_BYTES + _NONCE_BYTES :], None)


def parse_keys(current: str | None, old: str | None = None) -> KeyRing | None:
    """The key ring of the two settings; None when no key is set (no encryption)."""
    olds = [part for part in (old or "").split(",") if part.strip()]
    if not (current or "").strip():
        if olds:
            raise EncryptionKeyError(
                f"{OLD_KEYS_VARIABLE} is set but {KEY_VARIABLE} is not; set {KEY_VARIABLE} "
                f"to the key new data is written under ({_KEY_FORM})"
            )
        return None
    return KeyRing(
        _parse_key(current or "", KEY_VARIABLE),
        tuple(_parse_key(part, OLD_KEYS_VARIABLE) for part in olds),
    )


def key_ring(settings: Any) -> KeyRing | None:
    """The key ring the settings name (``encryption_key``, ``encryption_old_keys``)."""

    def text(value: Any) -> str | None:
        return None if value is None else str(value.get_secret_value())

    return parse_keys(text(settings.encryption_key), text(settings.encryption_old_keys))


def missing_key_error(missing: Iterable[str], where: str) -> EncryptionKeyError:
    """The refusal for data written under keys that are not at hand."""
    names = ", ".join(sorted(missing))
    return EncryptionKeyError(
        f"{KEY_VARIABLE}: {where} was written under key {names}, which neither "
        f"{KEY_VARIABLE} nor {OLD_KEYS_VARIABLE} holds; set {KEY_VARIABLE} to that key "
        f"({_KEY_FORM}), or list it in {OLD_KEYS_VARIABLE} after a rotation; nothing was "
        "read or changed"
    )


def check_keys(recorded: Collection[str], keys: KeyRing | None, where: str) -> None:
    """Refuse a database written under keys not at hand, before anything reads or writes it."""
    if not recorded:
        return
    if keys is None:
        raise EncryptionKeyError(
            f"{KEY_VARIABLE} is not set, but {where} is encrypted (key "
            f"{', '.join(sorted(recorded))}); set {KEY_VARIABLE} to the key it was written "
            f"with ({_KEY_FORM}); nothing was read or changed"
        )
    missing = set(recorded) - keys.ids
    if missing:
        raise missing_key_error(missing, where)


class AesGcmCipher(CipherProtocol):
    """LangGraph's cipher protocol on ``cryptography``'s AES-GCM, with key ids for rotation."""

    def __init__(self, keys: KeyRing) -> None:
        self.keys = keys

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        """Seal under the current key."""
        return CIPHER_NAME, self.keys.seal(plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        """Open a value sealed under any key of the ring; a changed value is an integrity error."""
        if ciphername != CIPHER_NAME:
            raise IntegrityError(f"checkpoint value sealed with unknown cipher {ciphername!r}")
        try:
            return self.keys.unseal(ciphertext)
        except InvalidTag:
            raise IntegrityError(
                "a checkpoint value fails its encryption tag: it was changed in the database, "
                "or sealed under another key with the same id"
            ) from None


def seal_blob(keys: KeyRing | None, plain: bytes) -> bytes:
    """What a store keeps of a blob: sealed under the current key, or as is without one."""
    return plain if keys is None else MAGIC + keys.seal(plain)


def open_blob(keys: KeyRing | None, stored: bytes) -> bytes:
    """The plain bytes of a stored blob.

    A blob that does not open (changed, never sealed, or sealed under a key not at hand,
    which the database's recorded keys refuse before any read) is returned as stored: its
    sha256 then tells the store whether it is the blob recorded, so a damaged blob is
    reported as one, in the store's own words.
    """
    if keys is None or not stored.startswith(MAGIC):
        return stored
    try:
        return keys.unseal(stored[len(MAGIC) :])
    except (InvalidTag, EncryptionKeyError):  # changed, or plain bytes that begin alike
        return stored


def seal_text(keys: KeyRing | None, plain: str | None) -> str | None:
    """What the ledger keeps of a payload: sealed text under the current key, or as is."""
    if keys is None or plain is None:
        return plain
    return TEXT_PREFIX + base64.b64encode(keys.seal(plain.encode("utf-8"))).decode("ascii")


def open_text(keys: KeyRing | None, stored: str | None) -> str | None:
    """The plain text of a stored ledger payload; a changed one is an integrity error."""
    if stored is None or not stored.startswith(TEXT_PREFIX):
        return stored
    if keys is None:
        raise EncryptionKeyError(
            f"{KEY_VARIABLE} is not set, but the ledger's payloads are encrypted; set it to "
            f"the key they were written with ({_KEY_FORM})"
        )
    try:
        return keys.unseal(base64.b64decode(stored[len(TEXT_PREFIX) :])).decode("utf-8")
    except (InvalidTag, binascii.Error, ValueError):
        raise IntegrityError(
            "a ledger payload fails its encryption tag: it was changed in the database"
        ) from None


def seal_value(keys: KeyRing | None, value: Any) -> Any:
    """A JSON value as a queue keeps it: ``{"sealed": <sealed text>}``, or as is."""
    if keys is None:
        return value
    return {"sealed": seal_text(keys, json.dumps(value, ensure_ascii=False))}


def open_value(keys: KeyRing | None, stored: Any) -> Any:
    """A JSON value :func:`seal_value` kept, opened; any other value as it is."""
    if isinstance(stored, dict) and set(stored) == {"sealed"}:
        return json.loads(open_text(keys, stored["sealed"]) or "null")
    return stored


def unsealed(serde: Any, kind: str, stored: bytes) -> tuple[str, bytes]:
    """A checkpoint value as its serializer wrote it before sealing: ``(type, bytes)``.

    For readers that walk the msgpack without building models (``app.storage.thread_reads``);
    a value that was not sealed is returned as it is.
    """
    if "+" in kind and isinstance(serde, EncryptedSerializer):
        typ, name = kind.split("+", 1)
        return typ, serde.cipher.decrypt(name, stored)
    return kind, stored
