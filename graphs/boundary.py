"""Validation at every node boundary: nothing invalid is read, nothing invalid is written.

A TypedDict/pydantic state schema does not validate node outputs, and the dev server hands
nodes plain dicts, so both directions are checked here explicitly.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from contracts import VersionedContract
from graphs.channels import Channel, Reducer
from graphs.errors import ContractViolation, Omitted

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
            f"node {node!r} returned None for {channel!r}, which must hold a {declared.shown}",
            node=node,
            channel=channel,
            fields=[channel],
        )
    return validate_as(node, channel, value, declared.contract, many=declared.many)


def validate_as(
    node: str, channel: str, value: Any, model: type[VersionedContract], *, many: bool = False
) -> Any:
    """A channel value as ``model``, or a list of it when ``many`` (None stays None).

    Anything else is a ContractViolation naming the field (``channel.2.text`` for an item).
    """
    if value is None:
        return None
    if many and not isinstance(value, list | tuple):
        raise ContractViolation(
            f"node {node!r} met a {type(value).__name__} in {channel!r}, which holds a "
            f"list[{model.__name__}]",
            node=node,
            channel=channel,
            fields=[channel],
        )
    items = list(enumerate(value)) if many else [(None, value)]
    found = []
    for index, item in items:
        where = channel if index is None else f"{channel}.{index}"
        try:
            found.append(model.model_validate(item))
        except ValidationError as error:
            raise ContractViolation(
                f"node {node!r} met an invalid {model.__name__} in {channel!r}: "
                f"{describe_validation_error(error, where)}",
                node=node,
                channel=channel,
                fields=_locations(error, where),
            ) from error
    return found if many else found[0]


class CheckedState(Mapping[str, Any]):
    """The state as one node visit sees it: each channel validated once, when first read.

    Every read in the visit (the body's, its router's, its envelope's) gets the same
    validated copy of a channel, never the state's own object: the visit works from one
    checked value per channel, and validates each once instead of at every read. A body
    that changes a list inside what it read changes that copy for the rest of its visit;
    the state changes only through the update, which is validated on the way out.
    """

    def __init__(
        self,
        state: Mapping[str, Any],
        checked: Mapping[tuple[str, type], Any] | None = None,
        *,
        schema: Collection[str] | None = None,
        reader: str = "",
        fix: str = "",
    ) -> None:
        self._state = state
        self._checked: dict[tuple[str, type], Any] = dict(checked or {})
        self._schema = None if schema is None else frozenset(schema)
        self._reader = reader
        self._fix = fix

    def __getitem__(self, channel: str) -> Any:
        self._check_declared(channel)
        return self._state[channel]

    def _check_declared(self, channel: str) -> None:
        """A read beyond the input schema LangGraph was given fails loudly, never as None.

        LangGraph hands a node (and a router) only the channels of its input schema, so a
        channel outside it would read as absent: the wrong answer, silently.
        """
        if self._schema is not None and channel not in self._schema:
            raise Omitted(
                f"{self._reader} reads {channel!r}, which its input schema does not "
                f"declare; declared: {sorted(self._schema)}; {self._fix or 'declare it'}"
            )

    def restricted(
        self, schema: Collection[str] | None, reader: str, fix: str = ""
    ) -> CheckedState:
        """The same checked state as seen by a reader given only ``schema`` (None: all)."""
        return CheckedState(self._state, self._checked, schema=schema, reader=reader, fix=fix)

    def __iter__(self) -> Iterator[str]:
        schema = self._schema
        return iter(self._state if schema is None else [c for c in self._state if c in schema])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def validated(
        self, node: str, channel: str, model: type[VersionedContract], *, many: bool = False
    ) -> Any:
        """The channel as ``model``, a list of it if ``many``, validated on its first read only."""
        self._check_declared(channel)
        key = (channel, list if many else model)
        if key not in self._checked:
            value = self._state.get(channel)
            self._checked[key] = validate_as(node, channel, value, model, many=many)
        return self._checked[key]

    def updated(
        self, update: Mapping[str, Any], reducers: Mapping[str, Reducer] | None = None
    ) -> CheckedState:
        """The state after ``update``, whose values were validated on the way out.

        A channel with a reducer gets what LangGraph will store: the update merged into
        its value (validated when first read, as any value the node did not write itself);
        the first write of a channel never written is taken as it is, as LangGraph takes it.
        """
        given = reducers or {}
        merging = {
            channel: given[channel]
            for channel in update
            if channel in given and channel in self._state
        }
        values = {
            channel: merging[channel](self._state.get(channel), value)
            if channel in merging
            else value
            for channel, value in update.items()
        }
        checked = {key: value for key, value in self._checked.items() if key[0] not in values}
        checked.update(
            ((channel, type(value)), value)
            for channel, value in values.items()
            if channel not in merging and isinstance(value, VersionedContract)
        )
        schema = None if self._schema is None else self._schema | set(values)
        return CheckedState(
            {**self._state, **values}, checked, schema=schema, reader=self._reader, fix=self._fix
        )


def read_declared(state: Mapping[str, Any], declared: Channel, *, node: str) -> Any:
    """Read a channel as it is declared: its contract, or a list of it (or None)."""
    if not declared.many:
        return read(state, declared.name, declared.contract, node=node)
    if isinstance(state, CheckedState):
        return state.validated(node, declared.name, declared.contract, many=True)
    return validate_as(node, declared.name, state.get(declared.name), declared.contract, many=True)


def read(state: Mapping[str, Any], channel: str, model: type[M], *, node: str) -> M | None:
    """Read a channel as its contract; accepts model instances or plain dicts."""
    if isinstance(state, CheckedState):
        validated = state.validated(node, channel, model)
    else:
        value = state.get(channel)
        validated = None if value is None else validate_as(node, channel, value, model)
    assert validated is None or isinstance(validated, model)
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
