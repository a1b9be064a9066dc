from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest
from langgraph.types import Send

from contracts import (
    ArtifactRef,
    DecisionLog,
    DraftArticle,
    Handoff,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
)
from graphs import build_graph
from graphs.errors import ContractViolation, WiringError
from graphs.graph import route_after_research, route_after_review
from graphs.routing import STOP
from tests.contracts.examples import EXAMPLES
from tests.graphs.test_declare import tally
from tests.graphs.test_detour import plan
from tests.graphs.test_omissions import run

SHA = "a" * 64


def _ref(kind: str = "draft") -> ArtifactRef:
    return ArtifactRef(
        artifact_id=f"t-{kind}",
        kind=kind,  # type: ignore[arg-type]
        uri=f"artifact://{kind}/t-{kind}",
        media_type="text/markdown",
        sha256=SHA,
        revision=1,
        size_bytes=10,
    )


def _state(verdict: str, revision: int, rounds: int = 3) -> dict[str, Any]:
    return {
        "task": TaskSpec(task_id="t", objective="Explain it", budget={"max_review_rounds": rounds}),
        "draft": DraftArticle(
            task_id="t", result_status="completed", revision=revision, body=_ref(), word_count=3
        ),
        "review": ReviewResult(task_id="t", draft_revision=revision, verdict=verdict),  # type: ignore[arg-type]
    }


def test_failed_research_routes_to_conclude() -> None:
    bundle = ResearchBundle(task_id="t", result_status="failed")
    assert route_after_research({"research": bundle}) == "conclude"


def test_research_without_facts_routes_to_conclude_even_if_partial() -> None:
    state = {"research": {"task_id": "t", "result_status": "partial", "facts": []}}
    assert route_after_research(state) == "conclude"


def test_router_accepts_plain_dicts_as_a_server_would_send() -> None:
    state = {key: value.model_dump(mode="json") for key, value in _state("approved", 1).items()}
    assert route_after_review(state) == "finalize"


@pytest.mark.parametrize(
    ("verdict", "revision", "rounds", "expected"),
    [
        ("approved", 1, 3, "finalize"),
        ("changes_requested", 1, 3, "writer"),
        ("changes_requested", 2, 3, "writer"),
        ("changes_requested", 3, 3, "conclude"),
        ("changes_requested", 1, 1, "conclude"),
        ("rejected", 1, 3, "conclude"),
    ],
)
def test_review_routing_follows_verdict_and_round_budget(
    verdict: str, revision: int, rounds: int, expected: str
) -> None:
    assert route_after_review(_state(verdict, revision, rounds)) == expected


def test_a_round_granted_in_the_decision_log_extends_the_budget_and_nothing_else_does() -> None:
    state = _state("changes_requested", 3, 3)
    state["handoff"] = EXAMPLES[Handoff].model_copy(update={"granted_review_rounds": 1})
    assert route_after_review(state) == "conclude"
    granted = (
        EXAMPLES[DecisionLog]
        .decisions[0]
        .model_copy(update={"request_kind": "review_decision", "action": "grant_round"})
    )
    state["decisions"] = DecisionLog(decisions=[granted])
    assert route_after_review(state) == "writer"


def test_review_of_another_draft_revision_is_refused() -> None:
    state = _state("approved", 2)
    state["review"] = ReviewResult(task_id="t", draft_revision=1, verdict="approved")
    with pytest.raises(ValueError, match="revision 1.*revision 2"):
        route_after_review(state)


def test_router_without_review_names_the_missing_channel() -> None:
    state = _state("approved", 1)
    del state["review"]
    with pytest.raises(ContractViolation, match="review"):
        route_after_review(state)


def sends_tasks(state: Mapping[str, Any]) -> Literal["tally"]:
    """LangGraph's map step, its return type naming the node by its Literal."""
    return [Send("tally", {"task": state["task"]})]  # type: ignore[return-value]


def sends_typed(state: Mapping[str, Any]) -> list[Send]:
    return [Send("tally", {"task": state["task"]})]


def test_a_send_to_a_node_a_route_names_or_with_no_node_to_reduce_it_is_told_the_fix(
    tmp_path: Path,
) -> None:
    with pytest.raises(WiringError, match=r"sends to 'tally', which no Send may start"):
        run(((plan, sends_tasks), (tally, STOP)), tmp_path, "t-send")
    with pytest.raises(WiringError, match=r"'tally' is started by Sends .* wired as \(tally, '"):
        build_graph(wiring=((plan, sends_typed), (tally, STOP)))
