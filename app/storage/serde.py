"""The checkpoint serializer, with every contract class on the msgpack allowlist."""

from __future__ import annotations

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from contracts import serializable_types


def contract_serializer() -> JsonPlusSerializer:
    """A serializer that revives contracts as models instead of warning and degrading."""
    return JsonPlusSerializer(allowed_msgpack_modules=serializable_types())
