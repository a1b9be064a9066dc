"""A node whose contract an existing agent reads, added without editing that agent's node.

``claim_check`` (the docs/adapt.md node) is declared here with ``read_by=("reviewer",)``
and wired with its next node named instead of a router: the Reviewer's agent receives the
check in its request's ``inputs``, its input hash covers it, and the omissions fail at
``build_graph`` naming the culprit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from app.workflow import Workflow
from contracts import ReviewResult
from graphs import WIRING, AgentOutput, Wiring, build_graph, node
from graphs.agents import ReviewRequest
from graphs.errors import WiringError
from graphs.nodes.reviewer import reviewer
from graphs.wiring import contribute_reads
from tests.backends import sqlite_settings
from tests.extension_claim_check import (
    OBJECTIVE,
    ClaimCheck,
    ClaimCheckInput,
    ClaimCheckOutput,
    claim_check,
)
from tests.placing import before_review, beside_the_reviewer

read_by_reviewer = node(
    "claim_check", reads=ClaimCheckInput, writes=ClaimCheckOutput, read_by=("reviewer",)
)(claim_check.body)


CONTRIBUTED = next(
    spec for spec, _ in contribute_reads(WIRING) if spec.name == "reviewer"
).contributed
"""What the project's own nodes give the reviewer's agent to read (none, as shipped)."""


def wiring_with(checker: Any, next_node: str = "reviewer") -> Wiring:
    """The wiring with ``checker`` where a new draft goes on to review, then ``next_node``."""
    added = beside_the_reviewer(WIRING, ((checker, next_node),))  # as the project starts it
    return (*before_review(WIRING, "claim_check"), *added)


@dataclass
class RecordingReviewer:
    """The shipped reviewer, keeping what each request carried in ``inputs``."""

    inner: Any
    seen: list[dict[str, Any]] = field(default_factory=list)

    def run(self, request: ReviewRequest) -> AgentOutput[ReviewResult]:
        self.seen.append(dict(request.inputs))
        result: AgentOutput[ReviewResult] = self.inner.run(request)
        return result


def test_the_reviewer_agent_receives_what_a_node_declared_it_reads(tmp_path: Path) -> None:
    settings: Settings = sqlite_settings(tmp_path / "data")
    with Workflow(settings) as plain:
        recording = RecordingReviewer(plain.context.agent_for(reviewer))
        context = plain.context.with_agent("reviewer", recording)
        with Workflow(settings, context=context, wiring=wiring_with(read_by_reviewer)) as flow:
            outcome = flow.run(OBJECTIVE, "read-by")
            ran = [run.node_id for run in flow.history("read-by") if run.status == "succeeded"]
    assert outcome.result_status == "completed"
    assert ran.index("writer") < ran.index("claim_check") < ran.index("reviewer")
    assert recording.seen, "the reviewer ran"
    for inputs in recording.seen:
        assert set(inputs) == {*CONTRIBUTED, "claim_check"}, "the project's own, and the check"
        check = inputs["claim_check"]
        assert isinstance(check, ClaimCheck) and check.unknown == []


def test_what_a_node_declared_an_agent_reads_is_part_of_that_node_s_input() -> None:
    specs = {spec.name: spec for spec, _ in contribute_reads(wiring_with(read_by_reviewer))}
    assert "claim_check" in specs["reviewer"].inputs, "the reviewer's input hash covers it"
    assert specs["reviewer"].contributed == (*CONTRIBUTED, "claim_check")
    assert "claim_check" not in reviewer.inputs, "the shipped declaration is left as it is"


@pytest.mark.parametrize(
    ("reader", "problem"),
    [
        pytest.param(
            "reveiwer",
            r"read_by='reveiwer', which is no other node",
            id="a-node-that-does-not-exist",
        ),
        pytest.param(
            "finalize",
            r"'finalize' is declared to read \['claim_check'\]",
            id="a-node-whose-agent-takes-no-inputs",
        ),
    ],
)
def test_read_by_a_node_that_cannot_read_fails_the_build(reader: str, problem: str) -> None:
    declared = node(
        "claim_check", reads=ClaimCheckInput, writes=ClaimCheckOutput, read_by=(reader,)
    )(claim_check.body)
    with pytest.raises(WiringError, match=problem):
        build_graph(wiring=wiring_with(declared))


def test_a_named_next_node_that_does_not_exist_fails_the_build() -> None:
    with pytest.raises(WiringError, match=r"then_reveiwer of 'claim_check' names no node"):
        build_graph(wiring=wiring_with(read_by_reviewer, "reveiwer"))
