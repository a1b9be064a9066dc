"""The checkpoint serializer, with every contract class on the msgpack allowlist."""

from __future__ import annotations

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from app.storage.encryption import AesGcmCipher, KeyRing
from contracts import serializable_types


def contract_serializer(keys: KeyRing | None = None) -> SerializerProtocol:
    """A serializer that revives contracts as models instead of warning and degrading.

    With ``keys`` every value is sealed under the current key (LangGraph's
    ``EncryptedSerializer``; see ``app.storage.encryption``) and values sealed under any key
    of the ring are read, as are values stored before encryption was turned on.
    """
    plain = JsonPlusSerializer(allowed_msgpack_modules=serializable_types())
    if keys is None:
        return plain
    return EncryptedSerializer(AesGcmCipher(keys), plain)
