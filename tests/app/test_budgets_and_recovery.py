"""Budgets end runs cleanly; transient faults are retried; thin evidence widens once."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from app.faults.points import with_faults
from app.faults.rules import parse_faults
from app.settings import Settings
from app.workflow import Workflow
from contracts import ErrorCode, RunOutcome, TaskSpec, TaskState, Usage
from graphs import WIRING, AgentOutput, NodeCall, NodeResult, RunContext, node
from graphs.graph import route_after_finalize
from graphs.nodes.finalize import finalize
from graphs.nodes.research import WIDENED
from graphs.routing import STOP, detour, placed_before
from graphs.wiring import rerouted
from tests.app.test_review_loop import SloppyWriter
from tests.conftest import OBJECTIVE, nodes_run, passes, write_corpus
from tests.extension_span_check import WIRING_WITH_SPAN_CHECK
from tests.extension_tools import ECHO

NODES = [spec for spec, _ in WIRING]


def test_one_review_round_with_a_rejected_draft_ends_partial_budget_exhausted(
    workflow: Workflow,
) -> None:
    context = workflow.context.with_agent("writer", SloppyWriter(bad_rounds=9))
    with Workflow(workflow.settings, context=context) as sloppy:
        outcome = sloppy.run(sloppy.task(OBJECTIVE, budget={"max_review_rounds": 1}), "t-1round")
    assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "partial")
    assert outcome.errors[0].code == ErrorCode.BUDGET_EXHAUSTED
    assert outcome.draft is not None


def test_a_deadline_in_the_past_fails_before_any_agent_runs(workflow: Workflow) -> None:
    past = datetime.now(UTC) - timedelta(minutes=1)
    outcome = workflow.run(workflow.task(OBJECTIVE, budget={"deadline": past}), "t-late")
    assert (outcome.state, outcome.result_status) == (TaskState.FAILED, "failed")
    assert {(error.code, error.field) for error in outcome.errors} == {
        (ErrorCode.BUDGET_EXHAUSTED, "budget.deadline")
    }, "each task stopped where the run starts says why"
    runs = workflow.history("t-late")
    first = workflow.wiring[0][0].name
    assert first in {run.node_id for run in runs}, "stopped where the run starts"
    assert all(run.status == "failed" for run in runs)
    assert all(run.error and run.error.kind == "budget_exhausted" for run in runs)
    assert workflow.context.store.ids() == [], "no agent wrote anything"


def test_a_tool_call_budget_stops_research_cleanly(workflow: Workflow) -> None:
    outcome = workflow.run(workflow.task(OBJECTIVE, budget={"max_tool_calls": 3}), "t-tools")
    bundle = workflow.state("t-tools")["research"]
    assert len(bundle.sources) == 2, "one call is the search, two are source reads"
    assert bundle.result_status == "partial"
    assert ErrorCode.BUDGET_EXHAUSTED in {error.code for error in bundle.errors}
    assert outcome.result_status == "failed"
    assert outcome.errors[0].code == ErrorCode.BUDGET_EXHAUSTED
    assert outcome.errors[0].field == "budget.max_tool_calls"
    runs = workflow.history("t-tools")
    nodes = [run.node_id for run in runs]
    assert passes(nodes, "research", "join_research") == ["research", "join_research"]
    stopped = runs[nodes.index("join_research") + 1 :]  # the writer, or a node put before it
    assert [run.error.kind if run.error else None for run in stopped] == ["budget_exhausted"]
    assert sum(run.usage.tool_calls for run in runs) == 3


def test_a_transient_fault_twice_then_cleared_completes_with_three_attempts(
    workflow: Workflow,
) -> None:
    delays: list[float] = []
    plan = parse_faults("transient:research:2", NODES)
    assert plan is not None
    context = with_faults(replace(workflow.context, sleep=delays.append), plan)
    with Workflow(workflow.settings, context=context) as flaky:
        outcome = flaky.run(OBJECTIVE, "t-flaky")
    assert outcome.result_status == "completed"
    research = [run for run in workflow.history("t-flaky") if run.node_id == "research"]
    assert [(run.attempt, run.status) for run in research] == [
        (1, "failed"),
        (2, "failed"),
        (3, "succeeded"),
    ]
    assert all(run.error and run.error.kind == "transient" for run in research[:2])
    assert delays == [0.2, 0.4], "backoff doubles"


def test_transient_faults_beyond_max_attempts_end_failed_and_retryable(
    workflow: Workflow,
) -> None:
    plan = parse_faults("transient:research:5", NODES)
    assert plan is not None
    context = with_faults(replace(workflow.context, sleep=lambda _: None), plan)
    with Workflow(workflow.settings, context=context) as flaky:
        outcome = flaky.run(flaky.task(OBJECTIVE, budget={"max_attempts": 2}), "t-down")
    assert outcome.result_status == "failed" and outcome.retryable
    assert outcome.errors[0].code == ErrorCode.TRANSIENT
    research = [run for run in workflow.history("t-down") if run.node_id == "research"]
    assert [(run.attempt, run.status) for run in research] == [(1, "failed"), (2, "failed")]
    assert "join_research" not in {run.node_id for run in workflow.history("t-down")}


def test_thin_evidence_widens_retrieval_once_and_then_proceeds(
    tmp_path: Path, workflow: Workflow
) -> None:
    corpus = write_corpus(
        tmp_path / "bees",
        {"dance.md": "# The waggle dance\n\nForagers run a figure of eight on the comb.\n"},
    )
    # Only the document's title names the dance: the first pass ranks sentences by their
    # own words and headings, the widened one by the title too.
    task = workflow.task("Describe the waggle dance", corpus=[str(corpus)])
    outcome = workflow.run(task, "t-widen")
    assert outcome.result_status == "completed"
    runs = [r for r in workflow.history("t-widen") if r.node_id in ("research", "join_research")]
    assert [run.node_id for run in runs][:3] == ["research", "join_research", "research"]
    assert workflow.state("t-widen")["research"].widened
    assert [run.note for run in runs][:3] == [None, None, WIDENED], "the audit says why"
    assert workflow.state("t-widen")["research"].summary().endswith("(widened retry)")


def test_a_corpus_answering_nothing_ends_partial_naming_the_question_after_two_passes(
    workflow: Workflow,
) -> None:
    outcome = workflow.run("Describe quantum chromodynamics of gluons", "t-none")
    assert outcome.state == TaskState.COMPLETED and outcome.result_status == "partial"
    assert outcome.article is None and outcome.fact_count == 0
    named = [error for error in outcome.errors if error.field == "questions.q-1"]
    assert named and named[0].code == ErrorCode.INSUFFICIENT_EVIDENCE
    assert "quantum chromodynamics" in named[0].detail
    ran = [run.node_id for run in workflow.history("t-none")]
    assert passes(ran, "research", "join_research", "writer", "conclude") == [
        "research",
        "join_research",
        "research",
        "join_research",
        "conclude",
    ], "two passes of research, then the end; nothing was written"


def test_invalid_fault_rules_are_refused() -> None:
    import pytest

    from app.faults.rules import InvalidFaultSpec

    for spec in ("kill:writer", "explode:writer:start", "transient:writer:many"):
        with pytest.raises(InvalidFaultSpec, match="invalid HANDOFF_FAULT rule"):
            parse_faults(spec, NODES)
    assert parse_faults("", NODES) is None and parse_faults(None, NODES) is None


def test_fault_rules_that_would_never_fire_are_refused_naming_what_exists() -> None:
    import pytest

    from app.faults.rules import InvalidFaultSpec

    names = ", ".join(spec.name for spec in NODES)
    with pytest.raises(
        InvalidFaultSpec, match=rf"'kill:writre:start' names no node; nodes: {names}$"
    ):
        parse_faults("kill:writre:start", NODES)
    with pytest.raises(InvalidFaultSpec, match="'conclude' never reaches 'after_artifact'"):
        parse_faults("kill:conclude:after_artifact", NODES)
    with pytest.raises(InvalidFaultSpec, match="'approve_research' never reaches 'attempt'"):
        parse_faults("transient:approve_research:1", NODES)


def test_a_settings_typo_in_a_fault_rule_fails_when_the_workflow_builds_its_context(
    workflow: Workflow,
) -> None:
    import pytest

    from app.faults.rules import InvalidFaultSpec

    settings = workflow.settings.with_overrides(fault="kill:finalise:start")
    with Workflow(settings) as typo, pytest.raises(InvalidFaultSpec, match="finalise"):
        typo.context  # noqa: B018


def test_a_wait_rule_holds_a_node_until_its_gate_file_exists(tmp_path: Path) -> None:
    import threading

    gate = tmp_path / "gate"
    plan = parse_faults(f"wait:writer:{gate}", NODES)
    assert plan is not None
    released = threading.Event()

    def writer_attempt() -> None:
        plan("writer:attempt")
        released.set()

    waiter = threading.Thread(target=writer_attempt)
    waiter.start()
    assert not released.wait(0.3), "the attempt waits while the gate is closed"
    plan("research:attempt")  # other nodes pass
    gate.touch()
    assert released.wait(5), "opening the gate lets the attempt go on"
    waiter.join()


def test_parallel_research_branches_share_the_tool_call_budget(workflow: Workflow) -> None:
    questions = ["Who found the Rosetta Stone?", "What scripts does the stone carry?"]
    task = workflow.task(OBJECTIVE, budget={"max_tool_calls": 7})
    task = task.model_copy(update={"questions": questions})
    workflow.run(task, "t-shared")
    research = [run for run in workflow.history("t-shared") if run.node_id == "research"]
    assert len(research) == 3, "three branches: the objective and two questions"
    spent = [run.usage.tool_calls for run in research]
    assert sum(spent) <= 7, f"branches spent {spent}: more than the budget together"
    assert all(calls <= 7 // 3 for calls in spent), f"each branch gets its share: {spent}"


def tokens_before(workflow: Workflow, thread: str, node_name: str) -> int:
    """The tokens the thread's attempts spent before ``node_name`` first started."""
    runs = workflow.history(thread)
    first = next(at for at, run in enumerate(runs) if run.node_id == node_name)
    return sum(run.usage.tokens for run in runs[:first])


@dataclass
class Costly:
    """An agent that reports tokens for its work, as a model-backed one does."""

    real: Any
    tokens: int = 100

    def run(self, request: Any) -> AgentOutput[Any]:
        output: AgentOutput[Any] = self.real.run(request)
        spent = Usage(tool_calls=output.usage.tool_calls, tokens=output.usage.tokens + self.tokens)
        return replace(output, usage=spent)


def costly(workflow: Workflow, *nodes: str) -> RunContext:
    """The workflow's services with these nodes' agents reporting tokens."""
    context = workflow.context
    for name in nodes:
        context = context.with_agent(name, Costly(context.agents[name]))
    return context


class AfterPublishInput(TypedDict):
    task: TaskSpec
    outcome: RunOutcome | None


@node("after_publish", reads=AfterPublishInput, writes=AfterPublishInput, tools=(ECHO,))
def after_publish(call: NodeCall) -> NodeResult:
    """A project's node after publishing (a notification through a tool): it could spend."""
    return NodeResult({})


@node("before_publish", reads=AfterPublishInput, writes=AfterPublishInput)
def before_publish(call: NodeCall) -> NodeResult:
    """A project's step before publishing with no agent and no tools: it cannot spend."""
    return NodeResult({})


def test_a_budget_spent_by_publishing_skips_a_node_after_it_and_keeps_the_article(
    settings: Settings,
) -> None:
    route = detour(route_after_finalize, STOP, via="after_publish")
    wiring = (*rerouted(WIRING, finalize, route), (after_publish, STOP))
    with Workflow(settings, wiring=wiring) as plain:
        plain.run(OBJECTIVE, "t-path")
        path = nodes_run(plain, "t-path")
        # every agent from the writer on spends, so the budget runs out just before publishing,
        # whatever nodes a project put between the writer and finalize
        spenders = {
            name: None
            for name in path[path.index("writer") : path.index("finalize")]
            if name in plain.context.agents
        }
    with (
        Workflow(settings, wiring=wiring) as plain,
        Workflow(settings, wiring=wiring, context=costly(plain, *spenders)) as workflow,
    ):
        workflow.run(OBJECTIVE, "t-measure")
        assert passes(nodes_run(workflow, "t-measure"), "finalize", "after_publish")
        spent = tokens_before(workflow, "t-measure", "finalize")
        task = TaskSpec(task_id="t-spent", objective=OBJECTIVE, budget={"max_tokens": spent})
        outcome = workflow.run(task, "t-spent")
        assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
        assert outcome.article is not None
        [skipped] = [run for run in workflow.history("t-spent") if run.node_id == "after_publish"]
        assert skipped.status == "failed" and skipped.error is not None
        assert skipped.error.kind == "budget_exhausted"


def test_a_spent_budget_lets_a_node_that_cannot_spend_run_on_to_publishing(
    settings: Settings,
) -> None:
    wiring = placed_before(WIRING, "finalize", before_publish)
    with (
        Workflow(settings, wiring=wiring) as plain,
        Workflow(settings, wiring=wiring, context=costly(plain, "writer", "reviewer")) as workflow,
    ):
        workflow.run(OBJECTIVE, "t-measure-idle")
        spent = tokens_before(workflow, "t-measure-idle", "finalize")
        task = TaskSpec(task_id="t-idle", objective=OBJECTIVE, budget={"max_tokens": spent})
        outcome = workflow.run(task, "t-idle")
        assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
        [ran] = [run for run in workflow.history("t-idle") if run.node_id == "before_publish"]
        assert ran.status == "succeeded", "nothing it does spends, so nothing stops it"


def test_a_budget_spent_before_a_branch_after_the_writer_ends_partial_with_the_draft(
    settings: Settings,
) -> None:
    """The branch sees only what its fan-out sent it; the run still ends with the draft."""
    wiring = WIRING_WITH_SPAN_CHECK
    with (
        Workflow(settings, wiring=wiring) as plain,
        Workflow(settings, wiring=wiring, context=costly(plain, "writer")) as workflow,
    ):
        workflow.run(OBJECTIVE, "t-measure")
        spent = tokens_before(workflow, "t-measure", "check_spans")
        task = TaskSpec(task_id="t-spent", objective=OBJECTIVE, budget={"max_tokens": spent})
        outcome = workflow.run(task, "t-spent")
        assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "partial")
        draft = workflow.state("t-spent")["draft"]
        assert outcome.draft is not None and outcome.draft == draft.body
        assert ErrorCode.BUDGET_EXHAUSTED in {error.code for error in outcome.errors}


def test_a_step_that_spends_more_than_the_budget_left_is_charged_and_audited_as_an_overrun(
    settings: Settings,
) -> None:
    with (
        Workflow(settings) as plain,
        Workflow(settings, context=costly(plain, "writer")) as workflow,
    ):
        task = TaskSpec(task_id="t-overrun", objective=OBJECTIVE, budget={"max_tokens": 60})
        outcome = workflow.run(task, "t-overrun")
        runs = workflow.history("t-overrun")
    [wrote] = [run for run in runs if run.node_id == "writer"]
    assert wrote.usage.tokens == 100, "charged all it spent"
    assert wrote.overrun == Usage(tokens=40), "and the audit says by how much it overran"
    assert [run.node_id for run in runs if run.overrun is not None] == ["writer"]
    assert ErrorCode.BUDGET_EXHAUSTED in {error.code for error in outcome.errors}
