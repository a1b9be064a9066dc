"""State channels, read from the TypedDicts that declare them: the contract of each.

A channel's contract is written once, in the annotation of the schema that declares it
(a node's ``reads``/``writes`` or the workflow's own). Two declarations that disagree
about one channel fail when the graph is built.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from langgraph.channels import LastValue
from typing_extensions import TypedDict

from contracts import VersionedContract


class ChannelError(TypeError):
    """A state schema that does not declare each channel as one contract (or None)."""


@dataclass(frozen=True)
class Channel:
    """One state channel: its name, its contract, and whether it may hold None."""

    name: str
    contract: type[VersionedContract]
    nullable: bool


def _contract_of(owner: str, name: str, annotation: Any) -> Channel:
    nullable = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        nullable = len(members) < len(get_args(annotation))
        if len(members) != 1:
            raise ChannelError(f"{owner}.{name}: declare one contract (or Contract | None)")
        annotation = members[0]
    if not (isinstance(annotation, type) and issubclass(annotation, VersionedContract)):
        raise ChannelError(
            f"{owner}.{name} is {annotation!r}; state channels hold versioned contracts only"
        )
    return Channel(name=name, contract=annotation, nullable=nullable)


@cache
def channels_of(schema: type) -> dict[str, Channel]:
    """The channels a TypedDict declares, each with its contract."""
    hints = get_type_hints(schema)
    return {name: _contract_of(schema.__name__, name, hint) for name, hint in hints.items()}


def merge(schemas: Iterable[tuple[str, type]]) -> dict[str, Channel]:
    """Every channel of the given (declarer, schema) pairs; a disagreement is an error."""
    found: dict[str, tuple[str, Channel]] = {}
    for declarer, schema in schemas:
        for name, channel in channels_of(schema).items():
            if name in found and found[name][1].contract is not channel.contract:
                other, earlier = found[name]
                raise ChannelError(
                    f"channel {name!r} is {earlier.contract.__name__} in {other} but "
                    f"{channel.contract.__name__} in {declarer}"
                )
            if name not in found or channel.nullable:
                found[name] = (declarer, channel)
    return {name: channel for name, (_, channel) in found.items()}


def reducer(contract: type[VersionedContract]) -> Any:
    """The contract's ``merged`` classmethod, if it has one: its channel takes many writes.

    Every other channel holds one value, and two writes in one step fail (LangGraph's
    InvalidUpdateError): what parallel branches write must go to a channel that merges.
    """
    return getattr(contract, "merged", None)


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

    A channel whose contract merges writes (``reducer``) is annotated with its reducer; one
    named in ``per_run`` holds a run's request only while that run goes (``RunInput``).
    """
    fields: dict[str, Any] = {}
    run_inputs = set(per_run)
    for channel in channels.values():
        kind: Any = channel.contract | None if channel.nullable else channel.contract
        merge_writes = reducer(channel.contract)
        if channel.name in run_inputs:
            fields[channel.name] = Annotated[kind, RunInput]
            continue
        fields[channel.name] = Annotated[kind, merge_writes] if merge_writes else kind
    schema: type = TypedDict(name, fields, total=False)  # type: ignore[misc]
    return schema
