"""Each step a template user can leave out fails loudly, naming what is missing and the fix.

Build-time omissions fail ``build_graph()`` (or the ``@node`` declaration); what only a run
can show fails that run with ``Omitted``. A call to a tool the node does not declare is in
``tests/graphs/test_tools.py``. The graphs here are small ones run in process on an
in-memory checkpointer and ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import interrupt
from typing_extensions import TypedDict

from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from app.workflow import Workflow
from contracts import RunOutcome, TaskSpec
from graphs import (
    AgentOutput,
    ArtifactStore,
    NodeCall,
    NodeResult,
    StepInfo,
    Wiring,
    build_graph,
    no_task,
    node,
    one_task,
)
from graphs.agents import from_channel
from graphs.boundary import read
from graphs.errors import Omitted, WiringError
from graphs.routing import STOP
from graphs.tools import Toolbox
from tests.extension_claim_check import WIRING_WITH_CLAIM_CHECK, claim_check
from tests.extension_side_by_side import DraftMeasure, DraftMeasureOutput
from tests.extension_tools import ECHO, ProbeOutput, ToolProbe
from tests.routes import check_handoffs_follow_the_route, unwalked


class TaskOnly(TypedDict):
    task: TaskSpec


class Nothing(TypedDict, total=False):
    pass


def run(wiring: Wiring, tmp_path: Path, thread: str, **agents: Any) -> dict[str, Any]:
    """Run ``wiring`` once on in-memory storage, with ``agents`` doing their nodes' work."""
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    context = replace(build_context(settings), agents=agents)
    graph = build_graph(wiring=wiring).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": thread}}
    task = TaskSpec(task_id=thread, objective="Show what a step left out does")
    graph.invoke({"task": task}, config, context=context)
    return graph.get_state(config).values


def to_end(state: Mapping[str, Any]) -> Literal["__end__"]:
    return STOP


@dataclass(frozen=True)
class EchoRequest:
    """What the echoing agent gets: the task, and the node's tools."""

    task: TaskSpec = field(metadata=from_channel("task"))
    store: ArtifactStore = field()
    step: StepInfo = field()
    tools: Toolbox | None = None


@dataclass(frozen=True)
class ToollessRequest:
    """A request with nothing to carry tools in."""

    task: TaskSpec = field(metadata=from_channel("task"))
    store: ArtifactStore = field()
    step: StepInfo = field()


@runtime_checkable
class EchoAgent(Protocol):
    def run(self, request: EchoRequest) -> AgentOutput[ToolProbe]: ...


class Echoing:
    """Calls ``echo`` through the tools its request carries, if it carries any."""

    def run(self, request: EchoRequest) -> AgentOutput[ToolProbe]:
        if request.tools is None:
            return AgentOutput(ToolProbe(answers=["no tools"], fields=[None]))
        answer = request.tools.call("echo", {"text": "hi"})
        code = answer.error.code if answer.error else "ok"
        return AgentOutput(ToolProbe(answers=[code], fields=[None]))


def test_tools_given_to_a_node_reach_its_agent_without_being_passed_to_delegate(
    tmp_path: Path,
) -> None:
    @node("ask", reads=TaskOnly, writes=ProbeOutput, agent=EchoAgent, tools=(ECHO,))
    def ask(call: NodeCall) -> NodeResult:
        probe = call.delegate(EchoRequest, "tool_probe")  # no tools=call.tools
        return NodeResult({"tool_probe": probe}, artifact_ids=[])

    values = run(((ask, to_end),), tmp_path, "t-delegate", ask=Echoing())
    assert values["tool_probe"].answers == ["ok"]


def test_tools_given_to_a_node_whose_agent_request_cannot_carry_them_fail_the_build() -> None:
    @node("ask", reads=TaskOnly, writes=ProbeOutput, agent=EchoAgent, tools=(ECHO,))
    def ask(call: NodeCall) -> NodeResult:
        probe = call.delegate(ToollessRequest, "tool_probe")
        return NodeResult({"tool_probe": probe}, artifact_ids=[])

    def run_agent(request: ToollessRequest) -> AgentOutput[ToolProbe]:
        raise AssertionError("never built")

    class Toolless(Protocol):
        def run(self, request: ToollessRequest) -> AgentOutput[ToolProbe]: ...

    toolless = runtime_checkable(Toolless)
    with pytest.raises(WiringError, match=r"ToollessRequest has no 'tools' field .* `tools: "):
        build_graph(wiring=((replace(ask, agent=toolless), to_end),))


def test_a_node_output_no_node_reads_fails_the_build_naming_read_by() -> None:
    unread = replace(claim_check, read_by=())  # the Reviewer would never see the check
    wiring = tuple(
        (unread if spec is claim_check else spec, route) for spec, route in WIRING_WITH_CLAIM_CHECK
    )
    with pytest.raises(
        WiringError,
        match=r"node 'claim_check' writes \['claim_check'\], which no node reads.*read_by=",
    ):
        build_graph(wiring=wiring)


def test_a_branch_without_task_view_fails_loudly_where_it_is_declared() -> None:
    with pytest.raises(TypeError, match=r"branch 'measure' declares no task_view: .* revision"):
        node("measure", reads=TaskOnly, writes=DraftMeasureOutput, branch=one_task)


@node("measure", reads=TaskOnly, writes=DraftMeasureOutput, branch=one_task, task_view=no_task)
def measure(call: NodeCall) -> NodeResult:
    return NodeResult({"draft_measure": DraftMeasure(revision=1, words=3)})


@node("probe", reads=TaskOnly, writes=ProbeOutput, branch=one_task, task_view=no_task)
def probe(call: NodeCall) -> NodeResult:
    return NodeResult({"tool_probe": ToolProbe(answers=["ok"], fields=[None])})


@node("start", reads=TaskOnly, writes=Nothing)
def start(call: NodeCall) -> NodeResult:
    return NodeResult({})


class Merged(ProbeOutput, DraftMeasureOutput, total=False):
    pass


def test_a_join_that_drops_a_branch_output_fails_the_run_naming_branch_and_channel(
    tmp_path: Path,
) -> None:
    @node("join", reads=TaskOnly, writes=Merged, joins=(probe, measure))
    def join(call: NodeCall) -> NodeResult:
        [(_, found)] = call.branch_outputs(probe, "tool_probe")  # the measure is forgotten
        return NodeResult({"tool_probe": found})

    wiring: Wiring = (
        (start, ("probe", "measure")),
        (probe, "join"),
        (measure, "join"),
        (join, to_end),
    )
    with pytest.raises(
        Omitted,
        match=r"join 'join' drops the 'draft_measure' output of branch 'measure'.*"
        r"call.branch_outputs\(measure, 'draft_measure'\)",
    ):
        run(wiring, tmp_path, "t-join")


class ReadsProbe(TaskOnly):
    tool_probe: ToolProbe | None


@node("greet", reads=TaskOnly, writes=ProbeOutput)
def greet(call: NodeCall) -> NodeResult:
    return NodeResult({"tool_probe": ToolProbe(answers=["hello"], fields=[None])})


PEEKED: list[int] = []
"""The attempts ``peeks`` ran, in order."""


@node("peeks", reads=ReadsProbe, writes=Nothing)
def peeks(call: NodeCall) -> NodeResult:
    PEEKED.append(call.step.attempt)
    call.read("tool_probe")
    call.read("review")  # ReadsProbe does not declare it
    return NodeResult({})


def test_a_body_reading_an_undeclared_channel_fails_its_first_run_naming_it(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    context = build_context(settings)
    graph = build_graph(wiring=((greet, "peeks"), (peeks, to_end))).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-peeks"}}
    task = TaskSpec(task_id="t-peeks", objective="Show what an undeclared read does")
    PEEKED.clear()
    with pytest.raises(
        Omitted,
        match=r"node 'peeks' reads 'review', which its input schema ReadsProbe does not "
        r"declare; declared: \['task', 'tool_probe'\]",
    ):
        graph.invoke({"task": task}, config, context=context)
    assert PEEKED == [1], "no repair: a read the declaration lacks is no bad agent output"
    saved = graph.get_state(config)
    assert saved.next == ("peeks",), "the thread waits where it failed"
    assert saved.values["tool_probe"] == ToolProbe(answers=["hello"], fields=[None])
    assert {"review", "outcome"}.isdisjoint(saved.values), "nothing of the failed node"
    [_, failed] = context.ledger.runs("t-peeks")
    assert failed.node_id == "peeks" and failed.status == "failed"
    assert failed.error is not None and "'review'" in failed.error.detail


SEEN: dict[str, set[str]] = {}
"""The channels each ``looks`` node was handed, by node name."""


def looking(name: str) -> Any:
    @node(name, reads=TaskOnly, writes=Nothing)
    def looks(call: NodeCall) -> NodeResult:
        SEEN[name] = set(call.state)
        return NodeResult({})

    return looks


@node("probed", reads=ReadsProbe, writes=Nothing)
def probed(call: NodeCall) -> NodeResult:
    return NodeResult({})


class EndsRoute(TypedDict, total=False):
    outcome: RunOutcome | None


def route_declared(state: EndsRoute) -> Literal["probed"]:
    return "probed"


def route_whole(state: Mapping[str, Any]) -> Literal["probed"]:
    return "probed"


def test_a_node_is_handed_only_what_it_and_its_router_declare_or_all_if_its_router_reads_all(
    tmp_path: Path,
) -> None:
    declared, whole = looking("declared"), looking("whole")
    SEEN.clear()
    run(((greet, "declared"), (declared, route_declared), (probed, to_end)), tmp_path, "t-1")
    assert "task" in SEEN["declared"]
    assert "tool_probe" not in SEEN["declared"], "LangGraph hands no undeclared channel"
    run(((greet, "whole"), (whole, route_whole), (probed, to_end)), tmp_path, "t-2")
    assert {"task", "tool_probe", "handoff"} <= SEEN["whole"], "a Mapping router reads all"


def route_peeking(state: EndsRoute) -> Literal["peeks", "__end__"]:
    probe = read(state, "tool_probe", ToolProbe, node="route_peeking")  # EndsRoute lacks it
    return "peeks" if probe is None else STOP


def test_a_router_reading_a_channel_its_state_type_does_not_declare_fails_naming_it(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    context = build_context(settings)
    graph = build_graph(wiring=((greet, route_peeking), (peeks, to_end))).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-route-peeks"}}
    task = TaskSpec(task_id="t-route-peeks", objective="Show what an undeclared route read does")
    with pytest.raises(
        Omitted,
        match=r"router route_peeking reads 'tool_probe', which its input schema does not "
        r"declare; declared: \['outcome'\]; add it to EndsRoute, or type the router's state "
        r"Mapping\[str, Any\] to read it all",
    ):
        graph.invoke({"task": task}, config, context=context)
    saved = graph.get_state(config)
    assert saved.next == ("greet",), "the thread waits where it failed"
    assert "tool_probe" not in saved.values, "nothing of the failed node is kept"
    [failed] = context.ledger.runs("t-route-peeks")
    assert failed.node_id == "greet" and failed.status == "failed"


@node("open_note", reads=TaskOnly, writes=Nothing)
def open_note(call: NodeCall) -> NodeResult:
    return NodeResult({})


@node("keep_note", reads=TaskOnly, writes=Nothing, terminal=True)
def keep_note(call: NodeCall) -> NodeResult:
    return NodeResult({})


@node("drop_note", reads=TaskOnly, writes=Nothing, terminal=True)
def drop_note(call: NodeCall) -> NodeResult:
    return NodeResult({})


def route_kept_drop(state: Mapping[str, Any]) -> Literal["keep_note", "drop_note"]:
    """A router whose branch to ``drop_note`` was taken out, its ``Literal`` left as it was."""
    return "keep_note"


def test_a_literal_target_no_path_of_its_router_returns_is_named_as_walked_by_no_test(
    settings: Settings,
) -> None:
    """The graph keeps the edge and its target looks reachable, so the build cannot tell;
    ``--routes-walked`` fails the suite on these lines (see tests/test_fast_loop.py)."""
    wiring: Wiring = ((open_note, route_kept_drop), (keep_note, STOP), (drop_note, STOP))
    with Workflow(settings, wiring=wiring) as workflow:
        task = TaskSpec(task_id="t-kept", objective="Keep a note, never drop one")
        workflow.graph.invoke({"task": task}, workflow.config("t-kept"), context=workflow.context)
        walked = check_handoffs_follow_the_route(workflow)
    assert ("open_note", "keep_note") in walked
    [line] = unwalked(walked, wiring)
    assert line.startswith("open_note -> drop_note: route_kept_drop names 'drop_note' in its")
    assert "take it out of the Literal" in line and "add a test that takes it" in line


@node("asks_directly", reads=TaskOnly, writes=Nothing, terminal=True)
def asks_directly(call: NodeCall) -> NodeResult:
    """Asks a person with LangGraph's own interrupt(), its node declaring no pause."""
    interrupt({"question": "Go on?"})
    return NodeResult({})


def test_a_node_calling_interrupt_without_declaring_a_pause_fails_its_run_naming_pauses(
    tmp_path: Path,
) -> None:
    """Its answer would reach the node unchecked and never reach the decision log."""
    with pytest.raises(
        Omitted, match=r"'asks_directly' called interrupt\(\) but declares no pause"
    ):
        run(((asks_directly, STOP),), tmp_path, "t-direct")
