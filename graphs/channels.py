"""State channels, read from the TypedDicts that declare them: the contract of each.

A channel's contract is written once, in the annotation of the schema that declares it
(a node's ``reads``/``writes`` or the workflow's own). Two declarations that disagree
about one channel fail when the graph is built.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from typing import (
    Annotated,
    Any,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from langgraph.channels import LastValue
from typing_extensions import TypedDict

from contracts import VersionedContract


class ChannelError(TypeError):
    """A state schema that does not declare each channel as one contract (or None)."""


Reducer = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Channel:
    """One state channel: its name, its contract, and whether it may hold None."""

    name: str
    contract: type[VersionedContract]
    nullable: bool
    reducer: Reducer | None = None
    """How a write merges into the value, as LangGraph's ``Annotated[Contract, reducer]``
    declares it (writes of one step too, e.g. parallel branches'); None: the write replaces
    the value, and two writes in one step fail (LangGraph's InvalidUpdateError)."""
    many: bool = False
    """The channel holds a list of its contract (``Annotated[list[Contract], operator.add]``,
    as a map's results are gathered in LangGraph), each item validated as the contract."""

    @property
    def annotation(self) -> Any:
        """The type of the channel's value: its contract, or a list of it."""
        contract: Any = self.contract
        return list[contract] if self.many else contract

    @property
    def shown(self) -> str:
        """The channel's type as messages name it."""
        return f"list[{self.contract.__name__}]" if self.many else self.contract.__name__


def _unannotated(owner: str, name: str, annotation: Any) -> tuple[Any, Reducer | None]:
    """An annotation without its ``Annotated`` metadata, and the reducer that metadata names.

    ``NotRequired``/``Required`` (which ``get_type_hints`` keeps with the metadata) go too.
    """
    while get_origin(annotation) in (NotRequired, Required):
        (annotation,) = get_args(annotation)
    if get_origin(annotation) is not Annotated:
        return annotation, None
    inner, *extras = get_args(annotation)
    reducers = [extra for extra in extras if callable(extra) and not isinstance(extra, type)]
    if len(reducers) > 1:
        raise ChannelError(f"{owner}.{name}: name one reducer in Annotated, not {reducers}")
    return inner, reducers[0] if reducers else None


def _contract_of(owner: str, name: str, annotation: Any) -> Channel:
    annotation, reducer = _unannotated(owner, name, annotation)
    nullable = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        nullable = len(members) < len(get_args(annotation))
        if len(members) != 1:
            raise ChannelError(f"{owner}.{name}: declare one contract (or Contract | None)")
        annotation, inner_reducer = _unannotated(owner, name, members[0])
        reducer = reducer or inner_reducer
    many = get_origin(annotation) is list and len(get_args(annotation)) == 1
    if many:
        (annotation,) = get_args(annotation)
    if not (isinstance(annotation, type) and issubclass(annotation, VersionedContract)):
        raise ChannelError(
            f"{owner}.{name} is {annotation!r}; state channels hold versioned contracts only "
            "(a contract, or a list of one: list[Contract])"
        )
    return Channel(name=name, contract=annotation, nullable=nullable, reducer=reducer, many=many)


@cache
def channels_of(schema: type) -> dict[str, Channel]:
    """The channels a TypedDict declares, each with its contract (and reducer, if any)."""
    hints = get_type_hints(schema, include_extras=True)
    return {name: _contract_of(schema.__name__, name, hint) for name, hint in hints.items()}


def merge(schemas: Iterable[tuple[str, type]]) -> dict[str, Channel]:
    """Every channel of the given (declarer, schema) pairs; a disagreement is an error.

    As in LangGraph, a declaration without a reducer (a reader's, say) agrees with one
    that names it; two different reducers of one channel do not.
    """
    found: dict[str, tuple[str, Channel]] = {}
    for declarer, schema in schemas:
        for name, channel in channels_of(schema).items():
            if name not in found:
                found[name] = (declarer, channel)
                continue
            other, earlier = found[name]
            if earlier.contract is not channel.contract or earlier.many != channel.many:
                raise ChannelError(
                    f"channel {name!r} is {earlier.shown} in {other} but "
                    f"{channel.shown} in {declarer}"
                )
            if earlier.reducer and channel.reducer and earlier.reducer is not channel.reducer:
                raise ChannelError(
                    f"channel {name!r} merges writes with {earlier.reducer.__qualname__} in "
                    f"{other} but with {channel.reducer.__qualname__} in {declarer}"
                )
            combined = replace(
                earlier,
                nullable=earlier.nullable or channel.nullable,
                reducer=earlier.reducer or channel.reducer,
            )
            found[name] = (other if earlier.reducer or not channel.reducer else declarer, combined)
    return {name: channel for name, (_, channel) in found.items()}


class RunInput(LastValue[Any]):
    """A channel holding what one run was asked (a revision): gone once that run finishes.

    LangGraph tells every channel when a run is finishing (``finish``); this one lets go of
    its value then, so a request a node refused leaves nothing of itself in the thread's
    state, and is never taken as the next run's. While the run goes, it is a LastValue.
    """

    __slots__ = ()

    def finish(self) -> bool:
        """Let go of the run's request as the run finishes (True: the channel changed)."""
        if not self.is_available():
            return False
        self.value = LastValue(self.typ).value  # the empty channel's value: no value
        return True


def state_schema(name: str, channels: dict[str, Channel], per_run: Iterable[str] = ()) -> type:
    """A TypedDict over the channels, for ``StateGraph`` (nullable ones may hold None).

    A channel declared with a reducer is annotated with it, as LangGraph reads reducers; one
    named in ``per_run`` holds a run's request only while that run goes (``RunInput``).
    """
    fields: dict[str, Any] = {}
    run_inputs = set(per_run)
    for channel in channels.values():
        kind: Any = channel.annotation | None if channel.nullable else channel.annotation
        if channel.name in run_inputs:
            fields[channel.name] = Annotated[kind, RunInput]
            continue
        fields[channel.name] = Annotated[kind, channel.reducer] if channel.reducer else kind
    schema: type = TypedDict(name, fields, total=False)  # type: ignore[misc]
    return schema
