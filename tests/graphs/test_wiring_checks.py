"""build_graph refuses each omission in the wiring, naming the node, router or channel.

Every variant below is the shipped WIRING plus (or with one router swapped for) a node
declared here with the project's ``@node``; the shipped nodes are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable

import pytest
from typing_extensions import TypedDict

from contracts import Handoff, ReviewResult, RunOutcome, TaskSpec
from graphs import WIRING, NodeCall, NodeResult, Wiring, build_graph, node
from graphs.agents import from_channel
from graphs.boundary import CheckedState
from graphs.entry import entry_router
from graphs.errors import Omitted, WiringError
from graphs.graph import route_after_approval, route_after_review_decision, routed
from graphs.pauses import Action, Pause
from graphs.wiring import targets
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


STARTS = WIRING[0][0].name
"""Where a run of the project's wiring starts."""


def first(spec: Any) -> Wiring:
    """The project's wiring with ``spec`` where a run starts, handing over to where it did."""
    return ((spec, STARTS), *WIRING)


@node("orphan", reads=TaskOnly, writes=Nothing)
def orphan(call: NodeCall) -> NodeResult:
    return NodeResult({})


@node("start", reads=TaskOnly, writes=Nothing)
def start(call: NodeCall) -> NodeResult:
    return NodeResult({})


def test_the_shipped_wiring_builds_and_its_edges_are_the_ones_routers_name() -> None:
    edges = graph_edges()
    named = {(spec.name, target) for spec, route in routed(WIRING) for target in targets(route)}
    assert named <= edges and {source for source, _ in named} >= {s.name for s, _ in WIRING}
    extended = build_graph(wiring=first(start)).compile().get_graph()  # reachable: fine
    assert ("start", STARTS) in {(edge.source, edge.target) for edge in extended.edges}


def test_a_node_no_route_reaches_fails_the_build() -> None:
    starts = list(targets(entry_router(routed(WIRING))))  # where a run, or a revision, starts
    assert {STARTS} | {spec.name for spec, _ in WIRING if spec.starts_on} <= set(starts)
    named = re.escape(str(starts))
    with pytest.raises(WiringError, match=rf"no route from {named} .* reaches \['orphan'\]"):
        build_graph(wiring=(*WIRING, (orphan, to_research)))


def test_a_router_target_with_no_node_fails_the_build() -> None:
    def route_to_nowhere(state: Mapping[str, Any]) -> Literal["nowhere_node", "research"]:
        return "research"

    with pytest.raises(
        WiringError, match=r"router route_to_nowhere of 'start' names no node: \['nowhere_node'\]"
    ):
        build_graph(wiring=((start, route_to_nowhere), *WIRING))


@node("ask_again", reads=TaskOnly, writes=Nothing, pauses=Pause("ask_again", (Action("approve"),)))
def ask_again(call: NodeCall) -> NodeResult:
    return NodeResult({})


def test_two_pauses_sharing_a_router_fail_the_build() -> None:
    pause, route = next((s, r) for s, r in WIRING if s.pauses and callable(r))
    shared = ((ask_again, route), *WIRING)
    with pytest.raises(
        WiringError,
        match=rf"pause 'ask_again' shares its router {route.__name__} with "
        rf"\['{pause.name}'\]: each pause routes on its own",
    ):
        build_graph(wiring=shared)


def test_the_shipped_pauses_share_no_router_and_route_alike() -> None:
    pauses = [route for spec, route in routed(WIRING) if spec.pauses]
    assert len(set(pauses)) == len(pauses), "each pause routes on its own"
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


def test_a_body_builds_whatever_it_reads_and_its_undeclared_read_is_refused_when_made() -> None:
    """A body's reads are not read from its source: the build passes, the read raises."""
    build_graph(wiring=first(peeks_at_review))
    task = TaskSpec(task_id="t", objective="Explain it")
    call = NodeCall(
        spec=peeks_at_review,
        state=CheckedState({"task": task}),
        task=task,
        ctx=cast(Any, None),
        step=cast(Any, None),
    )
    assert call.read("handoff") is None
    with pytest.raises(Omitted, match=r"reads 'review', which its input schema TaskAndHandoff"):
        call.require("review")


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


def test_an_agent_request_reading_a_channel_the_node_does_not_declare_fails_the_build() -> None:
    with pytest.raises(
        WiringError,
        match=r"node 'takes_notes' hands its agent a ReviewNoteRequest whose 'review' comes "
        r"from 'review', which its input schema TaskAndHandoff does not declare",
    ):
        build_graph(wiring=first(takes_notes))
