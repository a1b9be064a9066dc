"""Work of several kinds side by side: one route starts branch nodes of two kinds in one
step, their join waits for both, a stopped one ends the run with its own error, and a
route naming one of a join's branch nodes starts the others beside it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

import pytest

from app.settings import Settings
from app.workflow import Workflow
from contracts import ErrorCode
from graphs import WIRING
from graphs.entry import entry_router
from graphs.fan_out import PartialFanOut, check_started_together
from graphs.graph import routed
from graphs.nodes.join_research import join_research
from graphs.nodes.research import research
from graphs.nodes.reviewer import reviewer
from graphs.nodes.writer import writer
from graphs.routing import STOP, detour
from graphs.wiring import rerouted, targets
from tests.extension_side_by_side import (
    WIRING_SIDE_BY_SIDE,
    join_checks,
    measure_draft,
)
from tests.extension_span_check import OBJECTIVE, check_spans
from tests.graphs.test_branches import completed, joined_handoff
from tests.placing import drafts_to_review, router
from tests.routes import check_handoffs_follow_the_route


def test_two_kinds_of_branch_run_in_one_step_and_their_join_waits_for_both(
    settings: Settings,
) -> None:
    with Workflow(settings, wiring=WIRING_SIDE_BY_SIDE) as workflow:
        _, sources = completed(workflow, "t-side")
        values = workflow.graph.get_state(workflow.config("t-side")).values
        runs = workflow.history("t-side")
        counts = Counter(run.node_id for run in runs)
        assert counts["check_spans"] == len(sources) > 1
        assert counts["measure_draft"] == counts["join_checks"] == counts["writer"]
        order = [run.node_id for run in runs]
        last_branch = max(
            i for i, name in enumerate(order) if name in ("check_spans", "measure_draft")
        )
        assert order.index("join_checks") > last_branch, "the join ran after both kinds"
        assert order.index("reviewer") > order.index("join_checks")
        assert values["draft_measure"].words == values["draft"].word_count
        assert values["span_check"].sources == sources
        before = drafts_to_review(WIRING)[0].name  # the Writer, as shipped
        written = joined_handoff(workflow, "t-side", before)
        assert written.next_nodes == ["check_spans", "measure_draft"]
        joined = joined_handoff(workflow, "t-side", "join_checks")
        assert [(b.node, b.key) for b in joined.branches] == [
            *(("check_spans", source) for source in sources),
            ("measure_draft", "one"),
        ]
        edges = check_handoffs_follow_the_route(workflow)
        assert {(before, "check_spans"), (before, "measure_draft")} <= edges


def test_a_stopped_branch_of_one_kind_ends_the_run_with_its_own_error(
    settings: Settings,
) -> None:
    failing = settings.model_copy(update={"fault": "transient:measure_draft:99"})
    with Workflow(failing, wiring=WIRING_SIDE_BY_SIDE) as workflow:
        outcome = workflow.run(OBJECTIVE, "t-side-fail")
        assert outcome.result_status == "partial", "stopped after the writer's draft"
        runs = workflow.history("t-side-fail")
        assert "reviewer" not in {run.node_id for run in runs}, "nothing after the join ran"
        done = Counter((run.node_id, run.input_hash) for run in runs if run.status == "succeeded")
        assert max(done.values()) == 1, f"a node did its work twice: {done}"
        assert [error.code for error in outcome.errors] == [ErrorCode.TRANSIENT]
        assert {run.node_id for run in runs if run.status != "succeeded"} == {"measure_draft"}


def test_a_route_naming_one_branch_node_of_a_join_starts_every_branch_node_it_waits_for(
    settings: Settings,
) -> None:
    before = drafts_to_review(WIRING)[0]  # the Writer, as shipped
    route = router(before, next(route for spec, route in WIRING if spec.name == before.name))
    to_one = detour(route, "reviewer", via="check_spans")  # names one of the join's two
    wiring = rerouted(WIRING_SIDE_BY_SIDE, before, to_one)
    built = dict((spec.name, route) for spec, route in routed(wiring))
    assert targets(built[before.name])[:2] == ("check_spans", "measure_draft")
    assert built[before.name].__name__ == to_one.__name__, "errors name it"
    with Workflow(settings, wiring=wiring) as workflow:
        _, sources = completed(workflow, "t-side-one")
        counts = Counter(run.node_id for run in workflow.history("t-side-one"))
        assert counts["check_spans"] == len(sources) and counts["measure_draft"] == 1
        written = joined_handoff(workflow, "t-side-one", before.name)
        assert written.next_nodes == ["check_spans", "measure_draft"], "the handoff names both"


def test_the_first_node_of_the_wiring_starts_the_branch_nodes_its_join_waits_for_too() -> None:
    join = replace(join_research, joins=(research, check_spans))
    wiring = ((research, "join_research"), (check_spans, "join_research"), (join, STOP))
    start = entry_router(routed(wiring))
    assert targets(start) == ("research", "check_spans")
    assert start({}) == ("research", "check_spans")


def test_a_router_shared_by_two_nodes_stays_one_router_when_it_grows() -> None:
    def shared(state: Mapping[str, Any]) -> Literal["check_spans", "__end__"]:
        return "check_spans"

    join = (join_checks, STOP)  # where the join goes is the project's, and not this test's
    built = routed(((writer, shared), (reviewer, shared), *WIRING_SIDE_BY_SIDE[-3:-1], join))
    assert built[0][1] is built[1][1]
    assert built[0][1]({}) == ("check_spans", "measure_draft")


def test_a_route_returning_a_node_its_type_does_not_list_beside_others_is_refused() -> None:
    branches = {spec.name: spec for spec in (check_spans, measure_draft)}
    with pytest.raises(PartialFanOut, match="does not say it starts \\['writer'\\] side by"):
        check_started_together("r", ("check_spans", "writer"), branches)
