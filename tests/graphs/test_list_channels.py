"""A channel may hold a list of a contract, as LangGraph gathers a map's results.

``Annotated[list[Note], operator.add]`` is the channel LangGraph's map-reduce writes into:
each Send task adds its items, every item is validated as the contract on the way out and
on the way in, a wrong one is named by its place (``notes.1.text``), and the list survives
a checkpoint on disk.
"""

from __future__ import annotations

import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import Field
from typing_extensions import TypedDict

from app.services import build_context
from app.storage.serde import contract_serializer
from contracts import ErrorCode, TaskSpec, TaskState, VersionedContract
from graphs import RunContext, Wiring, build_graph, node
from graphs.channels import ChannelError, channels_of, merge
from graphs.routing import STOP
from tests.backends import sqlite_settings

TITLES = ["alpha", "beta", "gamma"]


class Note(VersionedContract):
    """One section's note."""

    kind: Literal["note"] = Field(default="note", description="Discriminator.")
    text: str = Field(min_length=1, description="The note.")


class Digest(VersionedContract):
    """Every note, in order."""

    kind: Literal["list_digest"] = Field(default="list_digest", description="Discriminator.")
    text: str = Field(description="The notes joined.")


class TaskOnly(TypedDict):
    task: TaskSpec


class NoteInput(TypedDict):
    task: TaskSpec
    note: Note | None


class NotesOutput(TypedDict, total=False):
    notes: Annotated[list[Note] | None, operator.add]


class Nothing(TypedDict, total=False):
    """Writes nothing."""


class DigestOutput(TypedDict, total=False):
    digest: Digest | None


class CombineInput(TypedDict):
    task: TaskSpec
    notes: list[Note] | None


WRITTEN: dict[str, Any] = {}
"""What the next ``summarise`` task returns for a title, instead of its note."""
SEEN: list[list[Note]] = []


@node("plan", reads=TaskOnly, writes=Nothing)
def plan(state: TaskOnly, runtime: Runtime[RunContext]) -> Nothing:
    return {}


def fan_out(state: TaskOnly) -> list[Send]:
    return [Send("summarise", {"note": Note(text=title)}) for title in TITLES]


@node("summarise", reads=NoteInput, writes=NotesOutput, retry=None)
def summarise(state: NoteInput, runtime: Runtime[RunContext]) -> NotesOutput:
    note = state["note"]
    assert note is not None
    return {"notes": WRITTEN.get(note.text, [Note(text=f"{note.text}!")])}


@node("combine", reads=CombineInput, writes=DigestOutput)
def combine(state: CombineInput, runtime: Runtime[RunContext]) -> DigestOutput:
    notes = state["notes"]
    assert notes is not None and all(isinstance(note, Note) for note in notes)
    SEEN.append(notes)
    return {"digest": Digest(text=" ".join(sorted(note.text for note in notes)))}


WIRING: Wiring = ((plan, fan_out), (summarise, "combine"), (combine, STOP))


@pytest.fixture(autouse=True)
def fresh() -> None:
    WRITTEN.clear()
    SEEN.clear()


def run(tmp_path: Path) -> dict[str, Any]:
    """The map over a task on an SQLite checkpoint file; the thread's state read back."""
    services = build_context(sqlite_settings(tmp_path / "data"))
    config: Any = {"configurable": {"thread_id": "t-list"}}
    task = TaskSpec(task_id="t-list", objective="Note each section")
    with sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False) as connection:
        saver = SqliteSaver(connection, serde=contract_serializer())
        graph = build_graph(wiring=WIRING).compile(checkpointer=saver)
        graph.invoke({"task": task}, config, context=services)
        return dict(graph.get_state(config).values)


def test_each_task_adds_its_items_and_the_reduce_reads_them_all_as_contracts(
    tmp_path: Path,
) -> None:
    values = run(tmp_path)
    assert sorted(note.text for note in values["notes"]) == ["alpha!", "beta!", "gamma!"]
    assert values["digest"] == Digest(text="alpha! beta! gamma!")
    assert len(SEEN) == 1 and len(SEEN[0]) == 3, "the reduce ran once, on every item"


def test_an_invalid_item_stops_the_run_naming_its_place_in_the_list(tmp_path: Path) -> None:
    WRITTEN["beta"] = [Note(text="fine"), {"kind": "note", "text": ""}]
    outcome = run(tmp_path)["outcome"]
    assert outcome.state == TaskState.FAILED
    assert [(e.code, e.field) for e in outcome.errors] == [
        (ErrorCode.INVALID_OUTPUT, "notes.1.text")
    ]
    assert SEEN == [], "nothing was reduced"


def test_a_value_that_is_no_list_stops_the_run_naming_the_channel_and_its_type(
    tmp_path: Path,
) -> None:
    WRITTEN["gamma"] = Note(text="alone")
    outcome = run(tmp_path)["outcome"]
    assert outcome.state == TaskState.FAILED
    assert "'notes', which holds a list[Note]" in (outcome.reason or "")


def test_a_list_and_a_single_contract_of_one_channel_disagree_at_build() -> None:
    class Single(TypedDict):
        notes: Note | None

    with pytest.raises(ChannelError, match=r"'notes' is list\[Note\] in a but Note in b"):
        merge([("a", NotesOutput), ("b", Single)])
    assert channels_of(NotesOutput)["notes"].many
