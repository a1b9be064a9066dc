"""build_graph refuses each omission in the wiring, naming the node, router or channel.

Every variant below is the shipped WIRING plus (or with one router swapped for) a node
declared here with the project's ``@node``; the shipped nodes are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable

import pytest
from typing_extensions import TypedDict

from contracts import Handoff, ReviewResult, RunOutcome, TaskSpec
from graphs import WIRING, NodeCall, NodeResult, Wiring, build_graph, node
from graphs.agents import from_channel
from graphs.boundary import CheckedState
from graphs.errors import ContractViolation, WiringError
from graphs.graph import route_after_approval, route_after_review_decision
from graphs.nodes.approve_research import approve_research
from graphs.nodes.review_decision import review_decision
from graphs.pauses import Action, Pause
from graphs.reads import body_reads
from tests.routes import graph_edges


class TaskOnly(TypedDict):
    task: TaskSpec


class TaskAndHandoff(TypedDict):
    task: TaskSpec
    handoff: Handoff | None


class Nothing(TypedDict, total=False):
    pass


def to_research(state: Mapping[str, Any]) -> Literal["research", "__end__"]:
    return "research"


def first(spec: Any) -> Wiring:
    """The shipped wiring with ``spec`` where a run starts, handing over to research."""
    return ((spec, to_research), *WIRING)


@node("orphan", reads=TaskOnly, writes=Nothing)
def orphan(call: NodeCall) -> NodeResult:
    return NodeResult({})


@node("start", reads=TaskOnly, writes=Nothing)
def start(call: NodeCall) -> NodeResult:
    return NodeResult({})


def test_the_shipped_wiring_builds_and_its_edges_are_the_ones_routers_name() -> None:
    edges = graph_edges()
    assert ("approve_research", "writer") in edges and ("review_decision", "writer") in edges
    assert ("approve_research", "__end__") in edges and ("review_decision", "__end__") in edges
    extended = build_graph(wiring=first(start)).compile().get_graph()  # reachable: fine
    assert ("start", "research") in {(edge.source, edge.target) for edge in extended.edges}


def test_a_node_no_route_reaches_fails_the_build() -> None:
    starts = r"\['research', 'revise_task'\]"  # the first node, and where a revision starts
    with pytest.raises(WiringError, match=rf"no route from {starts} .* reaches \['orphan'\]"):
        build_graph(wiring=(*WIRING, (orphan, to_research)))


def test_a_router_target_with_no_node_fails_the_build() -> None:
    def route_to_fact_check(state: Mapping[str, Any]) -> Literal["fact_check", "research"]:
        return "research"

    with pytest.raises(
        WiringError, match=r"router route_to_fact_check of 'start' names no node: \['fact_check'\]"
    ):
        build_graph(wiring=((start, route_to_fact_check), *WIRING))


@node("ask_again", reads=TaskOnly, writes=Nothing, pauses=Pause("ask_again", (Action("approve"),)))
def ask_again(call: NodeCall) -> NodeResult:
    return NodeResult({})


def test_two_pauses_sharing_a_router_fail_the_build() -> None:
    shared = ((ask_again, route_after_approval), *WIRING)
    with pytest.raises(
        WiringError,
        match=r"pause 'ask_again' shares its router route_after_approval with "
        r"\['approve_research'\]: each pause routes on its own",
    ):
        build_graph(wiring=shared)


def test_the_shipped_pauses_share_no_router_and_route_alike() -> None:
    routers = dict((spec.name, route) for spec, route in WIRING)
    assert routers[approve_research.name] is route_after_approval
    assert routers[review_decision.name] is route_after_review_decision
    for route in (route_after_approval, route_after_review_decision):
        assert route({}) == route({"outcome": None}) == "writer"
    outcome = {
        "thread_id": "t",
        "task_id": "t",
        "state": "TASK_STATE_FAILED",
        "result_status": "failed",
    }
    assert route_after_approval({"outcome": outcome}) == "__end__"
    assert route_after_review_decision({"outcome": outcome}) == "__end__"
    RunOutcome.model_validate(outcome)  # the state above is a real outcome


# -- reads of undeclared channels -------------------------------------------------------


@node("peeks_at_review", reads=TaskAndHandoff, writes=Nothing)
def peeks_at_review(call: NodeCall) -> NodeResult:
    call.read("handoff")
    if call.task.policies.require_approval:
        call.require("review")
    return NodeResult({})


def read_the_review(call: NodeCall, why: str) -> ReviewResult | None:
    """A helper the body hands its call to: its reads count as the body's."""
    return cast(ReviewResult | None, call.read("review"))


@node("helps_itself", reads=TaskAndHandoff, writes=Nothing)
def helps_itself(call: NodeCall) -> NodeResult:
    read_the_review(why="the helper", call=call)
    return NodeResult({})


def test_what_the_shipped_bodies_read_is_found_through_their_helpers() -> None:
    specs = {spec.name: spec for spec, _ in WIRING}
    reads = body_reads("writer", specs["writer"].body)
    assert set(reads) == {"handoff", "research", "freshness"}  # the rest via its request
    assert "graphs.stale.guard" in reads["freshness"]  # read inside the guard it calls
    for spec, _ in WIRING:
        assert set(body_reads(spec.name, spec.body)) <= set(spec.inputs), spec.name


@node("computes_a_name", reads=TaskAndHandoff, writes=Nothing)
def computes_a_name(call: NodeCall) -> NodeResult:
    channel = "hand" + "off"
    call.read(channel)
    return NodeResult({})


@node("reads_raw_state", reads=TaskAndHandoff, writes=Nothing)
def reads_raw_state(call: NodeCall) -> NodeResult:
    return NodeResult({} if call.state.get("review") is None else {})


@node("hands_call_away", reads=TaskAndHandoff, writes=Nothing)
def hands_call_away(call: NodeCall) -> NodeResult:
    keep = [call]
    return NodeResult({} if keep else {})


@node("calls_a_builtin", reads=TaskAndHandoff, writes=Nothing)
def calls_a_builtin(call: NodeCall) -> NodeResult:
    return NodeResult({} if getattr(call, "re" + "ad")("review") is None else {})


@node("shadows_a_helper", reads=TaskAndHandoff, writes=Nothing)
def shadows_a_helper(call: NodeCall) -> NodeResult:
    read_the_review = peeks_at_review.body  # not the helper the module-level name is
    return read_the_review(call)


in_a_lambda = node("in_a_lambda", reads=TaskAndHandoff, writes=Nothing)(lambda call: NodeResult({}))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (computes_a_name, r"'computes_a_name': .* calls call.read without a literal channel name"),
        (reads_raw_state, r"'reads_raw_state': .* uses call.state, which reads state around"),
        (hands_call_away, r"'hands_call_away': .* hands 'call' on where its reads cannot be"),
        (calls_a_builtin, r"'calls_a_builtin': .* passes the NodeCall to getattr, which is not"),
        (shadows_a_helper, r"'shadows_a_helper': .* a name bound inside the function"),
        (in_a_lambda, r"'in_a_lambda': the source of .*<lambda> .* cannot be read"),
    ],
    ids=["computed_name", "raw_state", "stored", "builtin", "local_name", "lambda"],
)
def test_a_read_that_cannot_be_checked_before_the_run_fails_the_build(
    spec: Any, message: str
) -> None:
    with pytest.raises(WiringError, match=message):
        build_graph(wiring=first(spec))


def test_the_runtime_check_still_refuses_an_undeclared_read() -> None:
    """A body that slips past the build (replaced after it) still meets the runner's check."""
    task = TaskSpec(task_id="t", objective="Explain it")
    call = NodeCall(
        spec=peeks_at_review,
        state=CheckedState({"task": task}),
        task=task,
        ctx=cast(Any, None),
        step=cast(Any, None),
    )
    assert call.read("handoff") is None
    with pytest.raises(ContractViolation, match=r"reads 'review', which its input schema"):
        call.read("review")


@dataclass(frozen=True)
class ReviewNoteRequest:
    """What a note-taking agent is handed: the task, and the last review."""

    task: TaskSpec = field(metadata=from_channel("task"))
    review: ReviewResult | None = field(metadata=from_channel("review"))


@runtime_checkable
class NoteAgent(Protocol):
    """Takes notes on the last review."""

    def run(self, request: ReviewNoteRequest) -> None:
        """One note."""
        ...


@node("takes_notes", reads=TaskAndHandoff, writes=Nothing, agent=NoteAgent)
def takes_notes(call: NodeCall) -> NodeResult:
    call.agent.run(call.request(ReviewNoteRequest))
    return NodeResult({})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            peeks_at_review,
            r"node 'peeks_at_review' reads 'review' at .*peeks_at_review \(line \d+\), "
            r"which its input schema TaskAndHandoff does not declare",
            id="a-read-in-the-body",
        ),
        pytest.param(
            helps_itself,
            r"node 'helps_itself' reads 'review' at .*read_the_review",
            id="a-read-in-a-helper-the-body-calls",
        ),
        pytest.param(
            takes_notes,
            r"node 'takes_notes' hands its agent a ReviewNoteRequest whose 'review' comes "
            r"from 'review', which its input schema TaskAndHandoff does not declare",
            id="an-agent-request-field",
        ),
    ],
)
def test_a_read_of_a_channel_the_node_does_not_declare_fails_the_build(
    spec: Any, message: str
) -> None:
    with pytest.raises(WiringError, match=message):
        build_graph(wiring=first(spec))
