"""A channel's contract and reducer come from its declaration, as LangGraph reads them.

``Annotated[Contract | None, reducer]`` in a node's ``writes`` gives the channel that
reducer, exactly as in a plain LangGraph state schema: each write merges into the value,
and what the runner routes and hands over from is the merged value LangGraph stores.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field
from typing_extensions import TypedDict

from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from contracts import RunOutcome, TaskSpec, VersionedContract
from graphs import NodeCall, NodeResult, Wiring, build_graph, node
from graphs.boundary import read
from graphs.channels import ChannelError, merge
from graphs.routing import STOP


class NoteLog(VersionedContract):
    """Notes that several nodes add to, in the order they ran."""

    kind: Literal["note_log"] = Field(default="note_log", description="Discriminator.")
    notes: list[str] = Field(description="Each note, oldest first.")

    EXAMPLES = [{"notes": ["drafted", "checked"]}]


def appended(current: Any, update: Any) -> NoteLog | None:
    """The reducer: an update's notes come after the ones the channel holds."""
    if update is None:
        return None if current is None else NoteLog.model_validate(current)
    old = NoteLog.model_validate(current).notes if current is not None else []
    return NoteLog(notes=[*old, *NoteLog.model_validate(update).notes])


def kept_last(current: Any, update: Any) -> Any:
    return update


class TaskOnly(TypedDict):
    task: TaskSpec


class NotesRead(TypedDict):
    task: TaskSpec
    notes: NoteLog | None


class NotesWritten(TypedDict, total=False):
    notes: Annotated[NoteLog | None, appended]


class NotesRoute(TypedDict):
    notes: NoteLog | None
    outcome: RunOutcome | None


@node("first_note", reads=TaskOnly, writes=NotesWritten)
def first_note(call: NodeCall) -> NodeResult:
    return NodeResult({"notes": NoteLog(notes=["first"])})


@node("second_note", reads=NotesRead, writes=NotesWritten)
def second_note(call: NodeCall) -> NodeResult:
    return NodeResult({"notes": NoteLog(notes=["second"])})


@node("third_note", reads=NotesRead, writes=NotesWritten)
def third_note(call: NodeCall) -> NodeResult:
    return NodeResult({"notes": NoteLog(notes=["third"])})


def after_second(state: NotesRoute) -> Literal["third_note", "__end__"]:
    """On only when both notes are in: the merged value, not the second node's write."""
    notes = read(state, "notes", NoteLog, node="after_second")
    return "third_note" if notes is not None and len(notes.notes) == 2 else STOP


WIRING: Wiring = (
    (first_note, "second_note"),
    (second_note, after_second),
    (third_note, STOP),
)


def test_a_reducer_declared_in_annotated_merges_every_write_and_routes_on_the_merged_value(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    graph = build_graph(wiring=WIRING).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-notes"}}
    task = TaskSpec(task_id="t-notes", objective="Add a note at each node")
    graph.invoke({"task": task}, config, context=build_context(settings))
    assert graph.get_state(config).values["notes"] == NoteLog(notes=["first", "second", "third"])
    handed = [snapshot.values.get("handoff") for snapshot in graph.get_state_history(config)]
    routes = {(h.from_node, h.next_allowed_action) for h in handed if h is not None}
    assert ("second_note", "third_note") in routes, "the envelope names where LangGraph went"


def test_a_declaration_without_the_reducer_agrees_with_one_that_names_it() -> None:
    channels = merge([("a reader", NotesRead), ("a writer", NotesWritten)])
    assert channels["notes"].reducer is appended and channels["notes"].nullable


def test_two_reducers_for_one_channel_fail_the_build_naming_both() -> None:
    class OtherWrites(TypedDict, total=False):
        notes: Annotated[NoteLog | None, kept_last]

    with pytest.raises(ChannelError, match=r"'notes' merges writes with appended .* kept_last"):
        merge([("first_note writes", NotesWritten), ("other writes", OtherWrites)])


def joined(current: NoteLog, update: NoteLog) -> NoteLog:
    """A reducer as LangGraph's docs write one (``operator.add``): never given an empty value."""
    return NoteLog(notes=[*current.notes, *update.notes])


class JoinedWritten(TypedDict, total=False):
    notes: Annotated[NoteLog | None, joined]


first_joined = replace(first_note, name="first_joined", writes=JoinedWritten)
second_joined = replace(second_note, name="second_joined", writes=JoinedWritten)


def test_the_first_write_of_an_empty_channel_is_taken_as_is_as_langgraph_takes_it(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    wiring: Wiring = ((first_joined, "second_joined"), (second_joined, STOP))
    graph = build_graph(wiring=wiring).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-joined"}}
    task = TaskSpec(task_id="t-joined", objective="Add a note at each node")
    graph.invoke({"task": task}, config, context=build_context(settings))
    assert graph.get_state(config).values["notes"] == NoteLog(notes=["first", "second"])
