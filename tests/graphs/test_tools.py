"""The tool boundary: each refused or failed call is a structured error, audited, and the
run continues or ends as the error says (a call to a tool the node does not declare fails
the run); the handoff states the next node's limits."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import pytest

from app.agents.writer import OfflineWriterAgent
from app.services import build_context
from app.settings import Settings
from app.workflow import Workflow
from contracts import (
    Budget,
    DraftArticle,
    ErrorCode,
    Handoff,
    NodeRun,
    ResearchBundle,
    TaskSpec,
    ToolReceipt,
)
from graphs import (
    WIRING,
    AgentOutput,
    NodeCall,
    NodeResult,
    ResearchRequest,
    WriteRequest,
    node,
)
from graphs.errors import Omitted
from graphs.nodes.writer import writer
from graphs.tools import ToolSpec
from tests.extension_span_check import OBJECTIVE
from tests.extension_tools import (
    ECHO,
    PLANS,
    SECRET,
    WIRING_WITH_TOOLS,
    EchoInput,
    EchoOutput,
    ProbeInput,
    ProbeOutput,
    ToolProbe,
)
from tests.routes import check_handoffs_follow_the_route, handed_on_by, handed_to


def run_probe(
    settings: Settings, thread: str, plan: list[tuple[str, dict[str, Any]]], **budget: Any
) -> tuple[Workflow, list[NodeRun], ToolProbe | None]:
    """Run the probe graph with ``plan``; its audit and what the calls answered."""
    PLANS[thread] = plan
    task = TaskSpec(task_id=thread, objective="Call the planned tools", budget=Budget(**budget))
    workflow = Workflow(settings, wiring=WIRING_WITH_TOOLS)
    with workflow:
        workflow.run(task, thread)
        check_handoffs_follow_the_route(workflow)
        values = workflow.graph.get_state(workflow.config(thread)).values
        runs = workflow.history(thread)
    found = values.get("tool_probe")
    return workflow, runs, ToolProbe.model_validate(found) if found is not None else None


def probe_handoff(workflow: Workflow, thread: str) -> Handoff:
    """The envelope ``probe`` handed on, as the thread's checkpoints hold it."""
    with workflow:
        return handed_on_by(workflow, thread, "probe")


def receipts_of(runs: list[NodeRun], node_id: str = "probe") -> list[ToolReceipt]:
    """Every receipt the audit holds for a node, attempt by attempt."""
    return [receipt for run in runs if run.node_id == node_id for receipt in run.tool_receipts]


def test_a_call_to_an_undeclared_tool_fails_the_run_loudly_naming_the_tool_and_node(
    settings: Settings,
) -> None:
    PLANS["t-undeclared"] = [("echo", {"text": "hi"}), ("delete_everything", {"path": "/"})]
    task = TaskSpec(task_id="t-undeclared", objective="Call the planned tools")
    with Workflow(settings, wiring=WIRING_WITH_TOOLS) as workflow:
        with pytest.raises(Omitted, match=r"node 'probe' calls tool 'delete_everything', wh"):
            workflow.run(task, "t-undeclared")
        [run] = workflow.history("t-undeclared")
    assert run.node_id == "probe" and run.status == "failed", "the attempt is audited"
    assert run.error is not None and "tools=(" in run.error.detail, "it names the fix"


def test_invalid_arguments_are_fix_arguments_naming_the_field(settings: Settings) -> None:
    plan = [("echo", {"text": "x" * 51}), ("echo", {"text": "ok", "times": "many"})]
    _, runs, probe = run_probe(settings, "t-invalid", plan)
    assert probe is not None and probe.answers == ["fix_arguments", "fix_arguments"]
    assert probe.fields == ["text", "times"]
    first, second = receipts_of(runs)
    assert first.error is not None and "at most 50 characters" in first.error.message
    assert "x" * 51 not in first.error.message, "no input value in the error"
    assert second.error is not None and second.error.field == "times"
    assert first.cost == second.cost == 0
    assert [run.usage.tool_calls for run in runs if run.node_id == "probe"] == [0]


def test_a_timeout_is_retryable_the_attempt_is_audited_and_the_retry_succeeds(
    settings: Settings,
) -> None:
    _, runs, probe = run_probe(settings, "t-timeout", [("slow", {"text": "late"})])
    assert probe is not None and probe.answers == ["ok"]
    attempts = [run for run in runs if run.node_id == "probe"]
    assert [run.status for run in attempts] == ["failed", "succeeded"]
    assert attempts[0].error is not None and attempts[0].error.kind == "transient"
    [timed_out] = attempts[0].tool_receipts
    assert timed_out.error is not None and timed_out.error.code == "retryable"
    assert timed_out.error.retryable and timed_out.cost == 1
    assert [run.usage.tool_calls for run in attempts] == [1, 1], "the late call cost too"
    [answered] = attempts[1].tool_receipts
    assert answered.error is None and answered.duration_ms is not None


def test_calls_beyond_a_tools_rate_are_budget_exhausted(settings: Settings) -> None:
    plan = [("limited", {"text": "a"})] * 3 + [("echo", {"text": "b"})]
    _, runs, probe = run_probe(settings, "t-rate", plan)
    assert probe is not None and probe.answers == ["ok", "ok", "budget_exhausted", "ok"]
    refused = receipts_of(runs)[2]
    assert refused.error is not None and "2 times per attempt" in refused.error.message
    assert refused.cost == 0
    assert {run.node_id for run in runs} == {"probe", "inspect"}, "the run went on"


def test_calls_beyond_the_tool_budget_are_refused_and_the_run_ends_budget_exhausted(
    settings: Settings,
) -> None:
    plan = [("echo", {"text": "a"})] * 3
    workflow, runs, probe = run_probe(settings, "t-budget", plan, max_tool_calls=2)
    assert probe is not None and probe.answers == ["ok", "ok", "budget_exhausted"]
    assert probe.fields[2] == "budget.max_tool_calls"
    assert [run.usage.tool_calls for run in runs if run.node_id == "probe"] == [2]
    [stopped] = [run for run in runs if run.node_id == "inspect"]
    assert stopped.status == "failed", "the next step is stopped before it starts"
    assert stopped.error is not None and stopped.error.kind == "budget_exhausted"
    with workflow:
        outcome = workflow.outcome("t-budget")
    assert [error.code for error in outcome.errors] == [ErrorCode.BUDGET_EXHAUSTED]


def test_sensitive_arguments_never_reach_a_receipt_or_the_audit(settings: Settings) -> None:
    plan = [("lookup", {"query": "rosetta", "api_key": SECRET}), ("lookup", {"api_key": SECRET})]
    workflow, runs, probe = run_probe(settings, "t-secret", plan)
    assert probe is not None and probe.answers == ["ok", "fix_arguments"]
    answered, refused = receipts_of(runs)
    assert "rosetta" in answered.input_summary and "api_key" not in answered.input_summary
    assert refused.error is not None and refused.error.field == "query"
    assert SECRET not in "".join(run.model_dump_json() for run in runs)
    assert SECRET not in probe_handoff(workflow, "t-secret").model_dump_json()


def test_an_output_over_the_tools_size_goes_to_the_store_by_reference(
    settings: Settings,
) -> None:
    thread = "t-trim"
    PLANS[thread] = [("echo", {"text": "0123456789" * 3, "times": 10}), ("echo", {"text": "s"})]
    seen: list[Any] = []

    @node("probe", reads=ProbeInput, writes=ProbeOutput, tools=WIRING_WITH_TOOLS[0][0].tools)
    def keeping(call: NodeCall) -> NodeResult:
        seen.extend(call.tools.call(name, args) for name, args in PLANS[thread])
        return NodeResult({"tool_probe": ToolProbe(answers=["ok"] * len(seen), fields=[])})

    wiring = ((keeping, WIRING_WITH_TOOLS[0][1]), WIRING_WITH_TOOLS[1])
    with Workflow(settings, wiring=wiring) as workflow:
        workflow.run(TaskSpec(task_id=thread, objective="Trim"), thread)
        big, small = seen
        assert big.output is None and big.ref is not None
        stored = EchoOutput.model_validate_json(workflow.context.store.get(big.ref))
        assert stored.text == "0123456789" * 30
        assert big.receipt.output_sha256 == big.ref.sha256
        assert small.ref is None and small.output == EchoOutput(text="s")


def test_a_write_tool_is_refused_until_a_person_can_confirm_it(settings: Settings) -> None:
    def write(args: EchoInput, env: Any) -> EchoOutput:
        raise AssertionError("a write tool ran unconfirmed")

    writes = ToolSpec(
        "export", EchoInput, EchoOutput, kind="write", timeout_seconds=None, run=write
    )

    @node("probe", reads=ProbeInput, writes=ProbeOutput, tools=(writes,))
    def exporting(call: NodeCall) -> NodeResult:
        answer = call.tools.call("export", {"text": "article"})
        assert answer.error is not None
        return NodeResult({"tool_probe": ToolProbe(answers=[answer.error.code], fields=[None])})

    wiring = ((exporting, WIRING_WITH_TOOLS[0][1]), WIRING_WITH_TOOLS[1])
    with Workflow(settings, wiring=wiring) as workflow:
        workflow.run(TaskSpec(task_id="t-write", objective="Export"), "t-write")
        [receipt] = receipts_of(workflow.history("t-write"))
    assert receipt.error is not None and receipt.error.code == "permission_denied"
    assert "approved_write" in receipt.error.message


def test_a_tool_declaration_is_checked_when_it_is_made() -> None:
    with pytest.raises(TypeError, match="writes: give it timeout_seconds=None"):
        ToolSpec("export", EchoInput, EchoOutput, kind="write")
    with pytest.raises(TypeError, match="sensitive fields"):
        ToolSpec("echo", EchoInput, EchoOutput, sensitive=("password",))
    with pytest.raises(TypeError, match="lower_snake_case"):
        ToolSpec("Echo Tool", EchoInput, EchoOutput)
    spec = WIRING_WITH_TOOLS[0][0].tools[0]
    with pytest.raises(TypeError, match="distinct ToolSpecs"):
        node("twice", reads=ProbeInput, writes=ProbeOutput, tools=(spec, spec))


def test_the_handoff_to_a_node_states_the_tools_and_the_checks_it_declares(
    settings: Settings,
) -> None:
    workflow, _, _ = run_probe(settings, "t-limits", [])
    handoff = probe_handoff(workflow, "t-limits")
    inspect = WIRING_WITH_TOOLS[1][0]
    assert handoff.next_allowed_action == "inspect"
    assert handoff.allowed_tools == ["echo"] == [tool.name for tool in inspect.tools]
    assert handoff.done_when == list(inspect.done_when)


def test_research_reads_and_searches_the_corpus_through_the_boundary_with_its_receipts_audited(
    settings: Settings,
) -> None:
    with Workflow(settings) as workflow:
        workflow.run(TaskSpec(task_id="t-reads", objective=OBJECTIVE), "t-reads")
        runs = [run for run in workflow.history("t-reads") if run.node_id == "research"]
        joined = handed_on_by(workflow, "t-reads", "join_research")
        stored = workflow.context.ledger.latest_result("t-reads", "join_research")
        check_handoffs_follow_the_route(workflow)
    assert runs and stored is not None
    assert "handoff" not in json.loads(stored), "a replay derives its envelope again"
    for run in runs:  # one branch per question: each read charged, then its one search
        reads = [r for r in run.tool_receipts if r.tool == "read_source"]
        searches = [r for r in run.tool_receipts if r.tool == "search_corpus"]
        assert reads and len(reads) + len(searches) == len(run.tool_receipts)
        assert all(
            r.error is None and r.cost == 1 and r.call_id.startswith("read-src-") for r in reads
        )
        assert [(r.call_id, r.cost, r.error) for r in searches] == [("search-q-1", 1, None)]
        assert searches[0].input_summary.startswith(OBJECTIVE)
        assert run.tool_receipts[-1] == searches[0]  # it searches what it has read
        assert run.usage.tool_calls == len(run.tool_receipts)
    assert joined.tool_receipts == [receipt for run in runs for receipt in run.tool_receipts]


@dataclass
class EchoingWriter(OfflineWriterAgent):
    """The offline writer, calling the tool its node was given before it writes."""

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        assert request.tools is not None, "the writer's request carries its node's tools"
        answer = request.tools.call("echo", {"text": "ok"})
        assert answer.error is None and answer.output == EchoOutput(text="ok")
        return super().run(request)


def test_a_tool_the_wiring_gives_a_shipped_agent_node_reaches_its_agent_and_is_receipted(
    settings: Settings,
) -> None:
    shipped = next(spec for spec, _ in WIRING if spec.name == writer.name)  # as wired
    given = replace(shipped, tools=(*shipped.tools, ECHO))  # the writer's module unchanged
    wiring = tuple((given if spec is shipped else spec, route) for spec, route in WIRING)
    context = build_context(settings, wiring=wiring).with_agent("writer", EchoingWriter())
    with Workflow(settings, context=context, wiring=wiring) as workflow:
        assert workflow.run(OBJECTIVE, "t-writer-tool").result_status == "completed"
        runs = workflow.history("t-writer-tool")
        handed = handed_to(workflow, "t-writer-tool", "writer")
    assert [receipt.tool for receipt in receipts_of(runs, "writer")] == ["echo"]
    assert handed.allowed_tools == [tool.name for tool in given.tools]


@dataclass
class EchoingResearch:
    """The context's research agent, calling the tool its node was given before it reads."""

    inner: Any

    def fingerprint(self, task: TaskSpec) -> str:
        fingerprint: str = self.inner.fingerprint(task)
        return fingerprint

    def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
        assert request.tools is not None, "research's request carries its node's tools"
        answer = request.tools.call("echo", {"text": request.step.branch or "one"})
        assert answer.error is None
        result: AgentOutput[ResearchBundle] = self.inner.run(request)
        return result


def test_a_branch_node_given_a_tool_in_the_wiring_is_the_one_its_join_waits_for(
    settings: Settings,
) -> None:
    shipped = next(spec for spec, _ in WIRING if spec.name == "research")
    given = replace(shipped, tools=(*shipped.tools, ECHO))  # research's module unchanged
    wiring = tuple((given if spec is shipped else spec, route) for spec, route in WIRING)
    context = build_context(settings, wiring=wiring)
    context = context.with_agent("research", EchoingResearch(context.agents["research"]))
    with Workflow(settings, context=context, wiring=wiring) as workflow:
        task = workflow.task(OBJECTIVE, questions=["Who found the Stone?"])
        assert workflow.run(task, "t-research-tool").result_status == "completed"
        runs = workflow.history("t-research-tool")
    branches = [run for run in runs if run.node_id == "research"]
    assert len(branches) == 2, "one task per question, joined as before"
    for run in branches:
        assert [r.tool for r in run.tool_receipts].count("echo") == 1
