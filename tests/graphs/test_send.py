"""LangGraph's map-reduce with ``Send`` runs inside the boundary.

A router returning ``list[Send]`` starts one task per Send of a node no route names; each
task gets its payload with the declared inputs it does not carry (the task), is audited
as its own attempt, and writes its outputs through their reducers; the node it goes on to
runs once, after all of them, on the merged value.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, Self

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import Field
from typing_extensions import TypedDict

from app.faults.points import with_faults
from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from contracts import ErrorCode, RunOutcome, TaskSpec, VersionedContract
from graphs import RunContext, Wiring, build_graph, node
from graphs.boundary import require
from graphs.errors import Omitted, TransientError, WiringError
from graphs.routing import STOP, stopped
from tests.backends import sqlite_settings

TITLES = ["alpha", "beta", "gamma"]


class SectionPlan(VersionedContract):
    """One section to summarise."""

    kind: Literal["section_plan"] = Field(default="section_plan", description="Discriminator.")
    title: str = Field(min_length=1, description="The section's title.")


class Plan(VersionedContract):
    """The sections, in order."""

    kind: Literal["plan"] = Field(default="plan", description="Discriminator.")
    sections: list[SectionPlan] = Field(description="Each section.")


class SectionNotes(VersionedContract):
    """Notes on sections; ``+`` appends, so ``operator.add`` is the channel's reducer."""

    kind: Literal["section_notes"] = Field(default="section_notes", description="Discriminator.")
    notes: list[str] = Field(description="One note per section summarised.")

    def __add__(self, other: Any) -> Self:
        return type(self)(notes=[*self.notes, *type(self).model_validate(other).notes])


class Digest(VersionedContract):
    """All sections' notes as one text."""

    kind: Literal["digest"] = Field(default="digest", description="Discriminator.")
    text: str = Field(description="The notes, in plan order.")


class TaskOnly(TypedDict):
    task: TaskSpec


class PlanOutput(TypedDict, total=False):
    plan: Plan | None


class PlanState(TypedDict):
    plan: Plan | None
    outcome: RunOutcome | None


class SectionInput(TypedDict):
    task: TaskSpec
    section: SectionPlan | None


class SectionOutput(TypedDict, total=False):
    notes: Annotated[SectionNotes | None, operator.add]


class CombineInput(TypedDict):
    task: TaskSpec
    plan: Plan | None
    notes: SectionNotes | None


class CombineOutput(TypedDict, total=False):
    digest: Digest | None


RAN: list[str] = []
"""Each section a summarise task ran its body for, in order."""
CRASH: set[str] = set()
"""Sections whose next summarise body raises (once each)."""
FLAKY: set[str] = set()
"""Sections whose summarise body fails as a transient error would."""
COMBINED: list[int] = []


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    RAN.clear()
    CRASH.clear()
    FLAKY.clear()
    COMBINED.clear()
    yield


@node("outline", reads=TaskOnly, writes=PlanOutput)
def outline(state: TaskOnly, runtime: Runtime[RunContext]) -> PlanOutput:
    return {"plan": Plan(sections=[SectionPlan(title=title) for title in TITLES])}


def fan_sections(state: PlanState) -> list[Send] | Literal["__end__"]:
    if stopped(state):
        return STOP
    plan = require(state, "plan", Plan, node="fan_sections")
    return [Send("summarise", {"section": section}) for section in plan.sections]


@node("summarise", reads=SectionInput, writes=SectionOutput, retry=None)
def summarise(state: SectionInput, runtime: Runtime[RunContext]) -> SectionOutput:
    section, task = state["section"], state["task"]
    assert section is not None and task is not None, "the payload, and the task from state"
    RAN.append(section.title)
    if section.title in CRASH:
        CRASH.discard(section.title)
        raise RuntimeError(f"summarise crashed on {section.title}")
    if section.title in FLAKY:
        raise TransientError(f"no answer for {section.title}")
    return {"notes": SectionNotes(notes=[f"{section.title} ({task.task_id})"])}


@node("combine", reads=CombineInput, writes=CombineOutput)
def combine(state: CombineInput, runtime: Runtime[RunContext]) -> CombineOutput:
    plan, notes = state["plan"], state["notes"]
    assert plan is not None and notes is not None
    COMBINED.append(len(notes.notes))
    return {"digest": Digest(text=" | ".join(sorted(notes.notes)))}


WIRING: Wiring = ((outline, fan_sections), (summarise, "combine"), (combine, STOP))
DIGEST = Digest(text=" | ".join(f"{title} (t-send)" for title in TITLES))


def run(wiring: Wiring, tmp_path: Path) -> tuple[Any, Any, RunContext]:
    """Run ``wiring`` on thread t-send in memory: the graph, its config and its services."""
    services = build_context(Settings(data_dir=tmp_path, database_url="memory://"))
    graph = build_graph(wiring=wiring).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-send"}}
    task = TaskSpec(task_id="t-send", objective="Summarise each section")
    graph.invoke({"task": task}, config, context=services)
    return graph, config, services


def test_each_send_runs_one_audited_attempt_and_the_reduce_runs_once_on_the_merged_notes(
    tmp_path: Path,
) -> None:
    graph, config, services = run(WIRING, tmp_path)
    values = graph.get_state(config).values
    assert values["digest"] == DIGEST
    assert sorted(values["notes"].notes) == sorted(f"{title} (t-send)" for title in TITLES)
    assert COMBINED == [3], "the reduce ran once, after every task, on all their notes"
    runs = services.ledger.runs("t-send")
    mapped = [run for run in runs if run.node_id == "summarise"]
    assert [run.status for run in mapped] == ["succeeded"] * 3
    assert len({run.input_hash for run in mapped}) == 3, "each hash covers its own payload"
    assert all(any(item.startswith("section:") for item in run.inputs) for run in mapped)
    assert [run.node_id for run in runs].count("combine") == 1
    handed = values["handoff"]
    assert handed.from_node == "combine"
    assert [(item.node, item.key) for item in handed.branches] == [
        ("summarise", f"send-{n:04d}") for n in (1, 2, 3)
    ], "the reduce's envelope lists every task the Sends started"
    assert values["branches"].results == [], "the reduce took the tasks' results out"


def test_the_envelope_before_the_map_names_the_node_the_sends_start(tmp_path: Path) -> None:
    graph, config, _ = run(WIRING, tmp_path)
    handed = [snapshot.values.get("handoff") for snapshot in graph.get_state_history(config)]
    routes = {(h.from_node, h.next_allowed_action) for h in handed if h is not None}
    assert ("outline", "summarise") in routes


def sends_misspelt(state: PlanState) -> list[Send]:
    return [Send("summarise", {"sectoin": SectionPlan(title="alpha")})]


def sends_invalid(state: PlanState) -> list[Send]:
    return [Send("summarise", {"section": {"title": ""}})]


def sends_elsewhere(state: PlanState) -> list[Send]:
    return [Send("summarize", {"section": SectionPlan(title="alpha")})]


@pytest.mark.parametrize(
    ("router", "error", "named"),
    [
        (sends_misspelt, Omitted, "the field 'sectoin', which its input schema SectionInput"),
        (sends_invalid, WiringError, r"invalid 'section' \(fields \['section.title'\]\)"),
        (sends_elsewhere, WiringError, "sends to 'summarize', which no Send may start"),
    ],
)
def test_a_wrong_send_fails_the_attempt_that_returns_it_naming_the_field_or_node(
    tmp_path: Path, router: Any, error: type[Exception], named: str
) -> None:
    wiring: Wiring = ((outline, router), (summarise, "combine"), (combine, STOP))
    with pytest.raises(error, match=named):
        run(wiring, tmp_path)
    assert RAN == [], "no task started"


class PlainOutput(TypedDict, total=False):
    notes: SectionNotes | None


def test_a_node_sends_start_writing_a_channel_with_no_reducer_fails_the_build() -> None:
    plain = replace(summarise, writes=PlainOutput)
    with pytest.raises(WiringError, match=r"writes \['notes'\] with no reducer"):
        build_graph(wiring=((outline, fan_sections), (plain, "combine"), (combine, STOP)))


def test_a_crashed_task_alone_runs_again_on_resume_from_an_sqlite_checkpoint(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path / "data")
    services = build_context(settings)
    config: Any = {"configurable": {"thread_id": "t-send"}}
    task = TaskSpec(task_id="t-send", objective="Summarise each section")
    CRASH.add("beta")
    with sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False) as connection:
        saver = SqliteSaver(connection, serde=contract_serializer())
        graph = build_graph(wiring=WIRING).compile(checkpointer=saver)
        with pytest.raises(RuntimeError, match="summarise crashed on beta"):
            graph.invoke({"task": task}, config, context=services, durability="sync")
        assert sorted(RAN) == TITLES

    with sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False) as connection:
        saver = SqliteSaver(connection, serde=contract_serializer())
        graph = build_graph(wiring=WIRING).compile(checkpointer=saver)
        graph.invoke(None, config, context=services, durability="sync")
        values = graph.get_state(config).values
    assert sorted(RAN) == sorted([*TITLES, "beta"]), "only the crashed task ran again"
    assert values["digest"] == DIGEST
    assert COMBINED == [3]
    mapped = [run for run in services.ledger.runs("t-send") if run.node_id == "summarise"]
    worked = [run.status for run in mapped if not run.reused]  # a replay did no work
    assert sorted(worked) == ["failed", *["succeeded"] * 3]


def test_a_task_that_had_to_stop_ends_the_run_at_the_reduce_with_its_own_error(
    tmp_path: Path,
) -> None:
    FLAKY.add("gamma")
    graph, config, services = run(WIRING, tmp_path)
    outcome = graph.get_state(config).values["outcome"]
    assert outcome.result_status == "failed" and outcome.retryable
    assert [error.code for error in outcome.errors] == [ErrorCode.TRANSIENT]
    assert "gamma" in outcome.errors[0].detail
    assert COMBINED == [], "the reduce ran no body on part of the tasks"
    failed = [run for run in services.ledger.runs("t-send") if run.status == "failed"]
    assert [(run.node_id, run.error.kind if run.error else None) for run in failed] == [
        ("summarise", "transient")
    ]


def test_a_task_recorded_finished_before_a_crash_is_replayed_by_its_input_hash_on_resume(
    tmp_path: Path,
) -> None:
    """The process dies after a task's attempt is recorded, before LangGraph saw its result.

    LangGraph may stop the step before the other tasks' writes are saved too: those are
    replayed from the audit as well, never run twice.
    """
    crashed: list[str] = []

    def die_once(point: str) -> None:
        if point == "summarise[send-0002]:before_return" and not crashed:
            crashed.append(point)
            raise RuntimeError("the process died")

    services = with_faults(
        build_context(Settings(data_dir=tmp_path, database_url="memory://")), die_once
    )
    graph = build_graph(wiring=WIRING).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-send"}}
    task = TaskSpec(task_id="t-send", objective="Summarise each section")
    with pytest.raises(RuntimeError, match="the process died"):
        graph.invoke({"task": task}, config, context=services)
    graph.invoke(None, config, context=services)
    assert sorted(RAN) == TITLES, "no body ran twice: the recorded result was replayed"
    assert graph.get_state(config).values["digest"] == DIGEST
    mapped = [run for run in services.ledger.runs("t-send") if run.node_id == "summarise"]
    replayed = [run for run in mapped if run.reused]
    assert replayed, "the crashed task's recorded result was replayed, audited as reused"
    assert len(replayed) + len(TITLES) == len([run for run in mapped if run.status == "succeeded"])


class LoopState(TypedDict):
    digest: Digest | None
    plan: Plan | None


@node("replan", reads=LoopState, writes=PlanOutput)
def replan(state: LoopState, runtime: Runtime[RunContext]) -> PlanOutput:
    """The plan; once it has been summarised, the same sections reversed with one more."""
    titles = TITLES if state.get("digest") is None else ["delta", *reversed(TITLES)]
    return {"plan": Plan(sections=[SectionPlan(title=title) for title in titles])}


def once_more(state: LoopState) -> Literal["replan", "__end__"]:
    plan = state.get("plan")
    return "replan" if plan is not None and len(plan.sections) == len(TITLES) else STOP


def test_a_map_whose_parts_moved_reruns_only_the_new_part(tmp_path: Path) -> None:
    wiring: Wiring = ((replan, fan_sections), (summarise, "combine"), (combine, once_more))
    run(wiring, tmp_path)
    assert sorted(RAN) == sorted([*TITLES, "delta"]), "the moved sections were not run again"
    assert COMBINED == [3, 7], "the second reduce read every task's notes, the moved ones too"
