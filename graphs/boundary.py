"""Validation at every node boundary: nothing invalid is read, nothing invalid is written.

A TypedDict/pydantic state schema does not validate node outputs, and the dev server hands
nodes plain dicts, so both directions are checked here explicitly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from contracts import VersionedContract
from graphs.errors import ContractViolation
from graphs.state import CHANNEL_CONTRACTS, NULLABLE_CHANNELS

M = TypeVar("M", bound=VersionedContract)


def _locations(error: ValidationError, prefix: str) -> list[str]:
    fields = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        fields.append(f"{prefix}.{path}" if path else prefix)
    return fields


def describe_validation_error(error: ValidationError, prefix: str = "") -> str:
    """One line per problem: the field path, what was wrong, what was expected."""
    parts = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        where = ".".join(part for part in (prefix, path) if part) or "(input)"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def validate_channel(node: str, channel: str, value: Any, *, direction: str) -> Any:
    """Validate one channel value against its contract, or raise naming the field."""
    if channel not in CHANNEL_CONTRACTS:
        raise ContractViolation(
            f"node {node!r} {direction} unknown state channel {channel!r}; "
            f"expected one of {sorted(CHANNEL_CONTRACTS)}",
            node=node,
            channel=channel,
            fields=[channel],
        )
    model = CHANNEL_CONTRACTS[channel]
    if value is None and channel in NULLABLE_CHANNELS:
        return None
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise ContractViolation(
            f"node {node!r} {direction} an invalid {model.__name__} in {channel!r}: "
            f"{describe_validation_error(error, channel)}",
            node=node,
            channel=channel,
            fields=_locations(error, channel),
        ) from error


def validate_update(node: str, update: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a node's whole update before LangGraph may checkpoint it."""
    return {
        channel: validate_channel(node, channel, value, direction="returned")
        for channel, value in update.items()
    }


def read(state: Mapping[str, Any], channel: str, model: type[M], *, node: str) -> M | None:
    """Read a channel as its contract; accepts model instances or plain dicts."""
    value = state.get(channel)
    if value is None:
        return None
    validated = validate_channel(node, channel, value, direction="read")
    assert isinstance(validated, model)
    return validated


def require(state: Mapping[str, Any], channel: str, model: type[M], *, node: str) -> M:
    """Read a channel that must be present at this point of the flow."""
    value = read(state, channel, model, node=node)
    if value is None:
        raise ContractViolation(
            f"node {node!r} needs {channel!r} ({model.__name__}) but the state has none",
            node=node,
            channel=channel,
            fields=[channel],
        )
    return value
