"""A node put before another: ``detour`` derives the router, ``rerouted`` the wiring."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from app.settings import Settings
from app.workflow import Workflow
from contracts import DraftArticle, RunOutcome, TaskSpec, TaskState
from graphs import WIRING, get_step_info, node
from graphs.errors import WiringError
from graphs.nodes.writer import writer
from graphs.outcomes import run_outcome
from graphs.routing import STOP, RouteState, detour, placed_before, started_beside, stopped
from graphs.wiring import rerouted, targets
from tests.app.test_review_loop import SloppyWriter
from tests.conftest import OBJECTIVE, nodes_run
from tests.extension_span_check import check_spans
from tests.graphs.test_omissions import TaskOnly
from tests.placing import drafts_to_review, router


def pick(state: Mapping[str, Any]) -> Literal["reviewer", "conclude"]:
    return state["to"]  # type: ignore[no-any-return]


def test_a_detour_goes_through_the_new_node_where_the_router_went_to_the_old_one() -> None:
    routed = detour(pick, "reviewer", via="claim_check")
    assert (routed({"to": "reviewer"}), routed({"to": "conclude"})) == ("claim_check", "conclude")
    assert set(targets(routed)) == {"claim_check", "conclude"}
    side = detour(pick, "reviewer", via=("check_spans", "measure_draft"))
    assert side({"to": "reviewer"}) == ("check_spans", "measure_draft")
    assert set(targets(side)) == {"check_spans", "measure_draft", "conclude"}


def test_a_detour_names_exactly_where_the_project_s_router_can_go() -> None:
    spec = drafts_to_review(WIRING)[0]
    route = router(spec, next(route for node, route in WIRING if node.name == spec.name))
    routed = detour(route, "reviewer", via="claim_check")
    beside = set(started_beside(route, "reviewer"))  # what it starts with the reviewer, if any
    expected = {*targets(route)} - {"reviewer"} - beside | {"claim_check"}
    assert set(targets(routed)) == expected
    assert routed.__name__ == f"{route.__name__}_via_claim_check"


def test_a_detour_from_a_target_the_router_never_takes_is_refused() -> None:
    with pytest.raises(TypeError, match="never goes to 'finalize'"):
        detour(pick, "finalize", via="claim_check")


def test_rerouting_a_node_the_wiring_lacks_is_refused() -> None:
    unwired = replace(check_spans, name="wired_nowhere")
    with pytest.raises(WiringError, match="'wired_nowhere' is not in the wiring"):
        rerouted(WIRING, unwired, pick)
    wiring = rerouted(WIRING, writer, pick)
    assert [route for spec, route in wiring if spec.name == writer.name] == [pick]
    assert len(wiring) == len(WIRING)


class Unwritten(TypedDict, total=False):
    """A step that only looks: it writes nothing."""


@node("plan", reads=TaskOnly, writes=Unwritten)
def plan(state: TaskOnly) -> Unwritten:
    """A step a project puts before every writing round."""
    return {}


def test_a_node_placed_before_another_runs_on_every_way_into_it(settings: Settings) -> None:
    """From research, a review round and a revision alike (each route into the writer)."""
    wiring = placed_before(WIRING, "writer", plan)
    with Workflow(settings, wiring=wiring) as plain:
        sloppy = plain.context.with_agent("writer", SloppyWriter(bad_rounds=1))
        with Workflow(settings, wiring=wiring, context=sloppy) as workflow:
            workflow.run(OBJECTIVE, "t-plan")
            workflow.revise("t-plan", {"max_words": 150, "reason": "a shorter piece"})
            ran = nodes_run(workflow, "t-plan")
    writes = [at for at, name in enumerate(ran) if name == "writer"]
    assert len(writes) >= 3, "a first draft, a redraft after review, one after the revision"
    assert all(ran[at - 1] == "plan" for at in writes), ran


REFUSE: list[bool] = []


class GateInput(TypedDict):
    task: TaskSpec
    draft: DraftArticle | None


class GateOutput(TypedDict, total=False):
    outcome: RunOutcome | None


@node("gate", reads=GateInput, writes=GateOutput)
def gate(state: GateInput) -> GateOutput:
    """A check that must hold before anything is published."""
    if not REFUSE[0]:
        return {}
    refused = run_outcome(
        state["task"], get_step_info(), TaskState.REJECTED, "failed", draft=state["draft"]
    )
    return {"outcome": refused}


def route_after_gate(state: RouteState) -> Literal["finalize", "__end__"]:
    return STOP if stopped(state) else "finalize"


@pytest.mark.parametrize("refuse", [False, True], ids=["holds", "refuses"])
def test_a_check_on_every_way_into_finalize_gates_publishing(
    settings: Settings, refuse: bool
) -> None:
    REFUSE[:] = [refuse]
    wiring = placed_before(WIRING, "finalize", gate, route_after_gate)
    with Workflow(settings, wiring=wiring) as workflow:
        outcome = workflow.run(OBJECTIVE, "t-gate")
        ran = nodes_run(workflow, "t-gate")
    assert "gate" in ran
    if refuse:
        assert outcome.article is None and outcome.state == TaskState.REJECTED
        assert "finalize" not in ran
    else:
        assert outcome.article is not None and ran.index("gate") < ran.index("finalize")


def test_a_node_placed_before_one_a_route_starts_beside_another_goes_before_both() -> None:
    def both(state: Mapping[str, Any]) -> list[Literal["reviewer", "check_spans"]]:
        return ["reviewer", "check_spans"]

    routed = detour(both, "reviewer", via="claim_check")
    assert targets(routed) == ("claim_check",)
    assert routed({}) == "claim_check"
    assert started_beside(both, "reviewer") == ("reviewer", "check_spans")
    placed = placed_before(((writer, both),), "reviewer", replace(check_spans, name="claim_check"))
    assert placed[-1][1] == ("reviewer", "check_spans"), "it goes on to both, side by side"
