"""Validation at every node boundary: nothing invalid is read, nothing invalid is written.

A TypedDict/pydantic state schema does not validate node outputs, and the dev server hands
nodes plain dicts, so both directions are checked here explicitly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from contracts import VersionedContract
from graphs.channels import Channel
from graphs.errors import ContractViolation

M = TypeVar("M", bound=VersionedContract)


def _locations(error: ValidationError, prefix: str) -> list[str]:
    fields = []
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        fields.append(f"{prefix}.{path}" if path else prefix)
    return fields


def _loc_part(part: str | int) -> str:
    """A field name as shown: an odd one (an unknown key) quoted and cut, on one line."""
    text = str(part)
    if len(text) <= 60 and text.isprintable():
        return text
    return repr(text[:60]) + ("…" if len(text) > 60 else "")


def describe_validation_error(error: ValidationError, prefix: str = "") -> str:
    """One line per problem: the field path, what was wrong, what was expected."""
    parts = []
    for item in error.errors():
        path = ".".join(_loc_part(part) for part in item["loc"])
        where = ".".join(part for part in (prefix, path) if part) or "(input)"
        message = item["msg"]
        if item["type"] in ("value_error", "assertion_error"):  # our own validators' words
            message = message.split(", ", 1)[-1]  # without "Value error, "
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def validate_channel(node: str, channel: str, value: Any, channels: Mapping[str, Channel]) -> Any:
    """Validate one channel value against its declared contract, or raise naming the field."""
    if channel not in channels:
        raise ContractViolation(
            f"node {node!r} returned {channel!r}, which it does not declare it writes; "
            f"declared: {sorted(channels)}",
            node=node,
            channel=channel,
            fields=[channel],
        )
    declared = channels[channel]
    if value is None and not declared.nullable:
        raise ContractViolation(
            f"node {node!r} returned None for {channel!r}, which must hold a "
            f"{declared.contract.__name__}",
            node=node,
            channel=channel,
            fields=[channel],
        )
    return validate_as(node, channel, value, declared.contract)


def validate_as(node: str, channel: str, value: Any, model: type[VersionedContract]) -> Any:
    """A channel value as ``model`` (None stays None), or ContractViolation naming the field."""
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise ContractViolation(
            f"node {node!r} met an invalid {model.__name__} in {channel!r}: "
            f"{describe_validation_error(error, channel)}",
            node=node,
            channel=channel,
            fields=_locations(error, channel),
        ) from error


def read(state: Mapping[str, Any], channel: str, model: type[M], *, node: str) -> M | None:
    """Read a channel as its contract; accepts model instances or plain dicts."""
    value = state.get(channel)
    if value is None:
        return None
    validated = validate_as(node, channel, value, model)
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
