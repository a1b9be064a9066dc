"""Parallel branches: a route to a branch node fans out one task per key, all in one step;
the join runs once they all finished, lists every branch in its envelope, and a branch that
had to stop ends the run with its own error. Omissions fail when the graph is built."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import pytest

from app.settings import Settings
from app.workflow import Workflow
from contracts import ErrorCode, Handoff, ResearchBundle, TaskSpec
from graphs import WIRING, AgentOutput, ResearchRequest, build_graph, node
from graphs.errors import ContractViolation, TransientError, WiringError
from tests.extension_span_check import (
    OBJECTIVE,
    WIRING_WITH_SPAN_CHECK,
    CheckQuotesInput,
    SpanCheckOutput,
    check_spans,
    join_spans,
    route_after_join_spans,
    source_keys,
)
from tests.routes import check_handoffs_follow_the_route, handed_on_by

QUESTIONS = ["Who found the Rosetta Stone?", "What scripts does the stone carry?"]
JOIN_RESEARCH = next(spec for spec, _ in WIRING if spec.name == "join_research")


def task(thread: str) -> TaskSpec:
    """The objective with two sub-questions: three research branches."""
    return TaskSpec(task_id=thread, objective=OBJECTIVE, questions=QUESTIONS)


def joined_handoff(workflow: Workflow, thread: str, join: str) -> Handoff:
    """The envelope the join handed on, as the thread's checkpoints hold it."""
    return handed_on_by(workflow, thread, join)


def completed(workflow: Workflow, thread: str) -> tuple[ResearchBundle, list[str]]:
    """The objective run to completion: its research bundle, and the ids of its sources."""
    assert workflow.run(OBJECTIVE, thread).result_status == "completed"
    bundle = ResearchBundle.model_validate(
        workflow.graph.get_state(workflow.config(thread)).values["research"]
    )
    return bundle, [source.id for source in bundle.sources]


def test_a_branch_added_through_the_wiring_runs_once_per_key_and_its_join_once(
    settings: Settings,
) -> None:
    with Workflow(settings, wiring=WIRING_WITH_SPAN_CHECK) as workflow:
        bundle, sources = completed(workflow, "t-quotes")
        runs = workflow.history("t-quotes")
        assert len(sources) > 1, "the example corpus has several sources: several branches"
        checks = [run for run in runs if run.node_id == "check_spans"]
        assert len(checks) == len({run.input_hash for run in checks}) == len(sources)
        assert Counter(run.node_id for run in runs)["join_spans"] == 1
        order = [run.node_id for run in runs]
        assert order.index("join_spans") > max(i for i, n in enumerate(order) if n == "check_spans")
        check = workflow.graph.get_state(workflow.config("t-quotes")).values["span_check"]
        assert check.sources == sources and check.facts == len(bundle.facts)
        envelope = joined_handoff(workflow, "t-quotes", "join_spans")
        assert [(b.node, b.key) for b in envelope.branches] == [("check_spans", s) for s in sources]
        check_handoffs_follow_the_route(workflow)


def test_research_branches_run_side_by_side_and_the_join_lists_each_ones_inputs(
    workflow: Workflow,
) -> None:
    """Each branch waits at a barrier for the others: run one after another, none could pass."""
    barrier = threading.Barrier(1 + len(QUESTIONS), timeout=30)

    @dataclass
    class Together:
        inner: Any

        def fingerprint(self, task: Any) -> str:
            return str(self.inner.fingerprint(task))

        def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
            barrier.wait()
            output: AgentOutput[ResearchBundle] = self.inner.run(request)
            return output

    context = workflow.context.with_agent("research", Together(workflow.context.agents["research"]))
    with Workflow(workflow.settings, context=context) as together:
        outcome = together.run(task("t-par"), "t-par")
        assert outcome.result_status in ("completed", "partial")
        research = [run for run in together.history("t-par") if run.node_id == "research"]
        assert len(research) == 3 and all(run.status == "succeeded" for run in research)
        envelope = joined_handoff(together, "t-par", "join_research")
        researched = [branch for branch in envelope.branches if branch.node == "research"]
        assert [branch.key for branch in researched] == ["q-1", "q-2", "q-3"]
        for branch in researched:
            assert branch.authoritative_inputs and branch.tool_receipts
        every = [r.call_id for b in envelope.branches for r in b.tool_receipts]
        assert [r.call_id for r in envelope.tool_receipts] == every


class FailsOn:
    """The offline research agent, failing for one question the way a test asks."""

    def __init__(self, inner: Any, question: str, error: Exception) -> None:
        self.inner, self.question, self.error = inner, question, error

    def fingerprint(self, task: Any) -> str:
        return str(self.inner.fingerprint(task))

    def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
        if request.question_id == self.question:
            raise self.error
        output: AgentOutput[ResearchBundle] = self.inner.run(request)
        return output


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (TransientError("the search API timed out"), ErrorCode.TRANSIENT),
        (
            ContractViolation("broke its contract", node="research", channel="research", fields=[]),
            ErrorCode.INVALID_OUTPUT,
        ),
    ],
)
def test_a_failing_branch_ends_the_run_with_its_own_error_and_nothing_runs_twice(
    workflow: Workflow, error: Exception, code: ErrorCode
) -> None:
    failing = FailsOn(workflow.context.agents["research"], "q-2", error)
    context = workflow.context.with_agent("research", failing)
    with Workflow(workflow.settings, context=context) as run:
        outcome = run.run(task("t-fail"), "t-fail")
        assert outcome.result_status == "failed"
        assert [e.code for e in outcome.errors] == [code]
        runs = run.history("t-fail")
        beside = {spec.name for spec in JOIN_RESEARCH.joins}  # research, and work beside it
        started = next(i for i, run in enumerate(runs) if run.node_id in beside)
        assert {run.node_id for run in runs[started:]} <= beside, "nothing after the join ran"
        researched = [r for r in runs if r.node_id == "research" and r.status == "succeeded"]
        done = Counter(r.input_hash for r in researched)
        assert len(done) == 2 and max(done.values()) == 1, "the other branches ran once each"


# -- omissions fail when the graph is built ---------------------------------------------


def test_a_join_whose_branch_is_not_in_the_wiring_fails_the_build() -> None:
    without = tuple(pair for pair in WIRING_WITH_SPAN_CHECK if pair[0] is not check_spans)
    with pytest.raises(WiringError, match="join 'join_spans' waits for branch 'check_spans'"):
        build_graph(wiring=without)


def test_a_branch_no_router_reaches_fails_the_build() -> None:
    stray = replace(check_spans, name="stray_checks")  # no route names it
    stray_join = replace(join_spans, name="stray_join", joins=(stray,))
    unrouted = (
        *WIRING_WITH_SPAN_CHECK,
        (stray, "stray_join"),
        (stray_join, route_after_join_spans),
    )
    with pytest.raises(WiringError, match=r"reaches \['stray_checks', 'stray_join'\]"):
        build_graph(wiring=unrouted)


def test_a_branch_routed_past_its_join_fails_the_build() -> None:
    def to_review(state: Mapping[str, Any]) -> Literal["reviewer"]:
        return "reviewer"

    wiring = tuple(
        (spec, to_review if spec is check_spans else route)
        for spec, route in WIRING_WITH_SPAN_CHECK
    )
    with pytest.raises(WiringError, match="branch 'check_spans' must route to the one join"):
        build_graph(wiring=wiring)


def test_a_join_left_out_of_the_wiring_fails_the_build() -> None:
    without = tuple(pair for pair in WIRING_WITH_SPAN_CHECK if pair[0] is not join_spans)
    with pytest.raises(WiringError, match=r"of 'check_spans' names no node: \['join_spans'\]"):
        build_graph(wiring=without)


def test_a_join_that_does_not_declare_its_branch_fails_the_build() -> None:
    @node("join_spans", reads=CheckQuotesInput, writes=SpanCheckOutput)
    def undeclared(call: Any) -> Any:
        raise AssertionError("never runs")

    wiring = tuple(
        (undeclared, route) if spec is join_spans else (spec, route)
        for spec, route in WIRING_WITH_SPAN_CHECK
    )
    with pytest.raises(WiringError, match="no node joins it"):
        build_graph(wiring=wiring)


def test_a_join_of_a_node_that_is_no_branch_fails_at_declaration() -> None:
    @node("plain", reads=CheckQuotesInput, writes=SpanCheckOutput)
    def plain(call: Any) -> Any:
        raise AssertionError("never runs")

    with pytest.raises(TypeError, match=r"joins \['plain'\], which are no branch nodes"):
        node("join_plain", reads=CheckQuotesInput, writes=SpanCheckOutput, joins=(plain,))


def test_a_fan_out_with_no_key_is_refused_rather_than_ending_the_run_silently() -> None:
    from graphs.errors import EmptyFanOut
    from graphs.fan_out import branch_sends

    empty = check_spans  # keys from the bundle's sources: none in this one
    state = {"research": ResearchBundle(task_id="t", result_status="failed")}
    assert source_keys(state) == []
    with pytest.raises(EmptyFanOut, match="found no branch key"):
        branch_sends([empty], state)
