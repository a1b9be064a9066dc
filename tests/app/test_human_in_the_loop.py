"""Approvals and answers as typed, validated decisions that resume the same thread."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import langgraph.types as langgraph_types
import pytest
from langgraph.errors import is_invalid_resume
from langgraph.types import Command
from pydantic import ValidationError
from typer.testing import CliRunner

from app.agents.apparatus import without_apparatus
from app.cli import base as cli_base
from app.cli import cli
from app.cli import decisions as cli_decisions
from app.errors import InvalidDecision, NotWaiting, ThreadFinished
from app.exit_codes import ExitCode
from app.settings import Settings
from app.text.primitives import CITATION, word_count
from app.workflow import Workflow, check_decision
from app.workflow import running as workflow_running
from contracts import ErrorCode, HumanRequest, TaskState
from graphs import WriteRequest
from tests import forked
from tests.app.test_review_loop import SloppyWriter
from tests.backends import backend_env
from tests.conftest import OBJECTIVE, nodes_run, passes

validate_resume = langgraph_types._validate_resume

QUESTIONS = ["Who found the Rosetta Stone in 1799?", "What did Champollion eat for lunch?"]


def handoff(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process, on the same backend as the test's settings."""
    return forked.run(args, env=backend_env(settings))


def paused(workflow: Workflow, thread_id: str, **task: Any) -> HumanRequest:
    task.setdefault("policies", {"require_approval": True})
    outcome = workflow.run(workflow.task(OBJECTIVE, **task), thread_id)
    assert outcome.state == TaskState.INPUT_REQUIRED
    assert outcome.human_request is not None
    return outcome.human_request


@pytest.mark.e2e
def test_pause_in_one_process_and_decide_in_another(settings: Settings) -> None:
    run = handoff(settings, "run", OBJECTIVE, "--thread", "t-hitl", "--require-approval")
    assert run.returncode == ExitCode.WAITING_FOR_HUMAN, run.stderr
    assert "waiting for a human decision: approve-research" in run.stdout
    assert "handoff resume t-hitl --approve" in run.stdout

    status = handoff(settings, "status", "t-hitl")
    assert "TASK_STATE_INPUT_REQUIRED" in status.stdout and "approve-research" in status.stdout

    decided = handoff(settings, "resume", "t-hitl", "--approve")
    assert decided.returncode == ExitCode.COMPLETED, decided.stderr
    with Workflow(settings) as workflow:
        path = ("research", "join_research", "approve_research", "writer", "reviewer", "finalize")
        assert passes(nodes_run(workflow, "t-hitl"), *path) == [*path]
        decisions = workflow.state("t-hitl")["handoff"].accepted_decisions
        assert [d.provenance.producer for d in decisions] == ["human"]


@pytest.mark.e2e
def test_resume_without_a_decision_is_refused_and_changes_nothing(settings: Settings) -> None:
    assert (
        handoff(settings, "run", OBJECTIVE, "--thread", "t-w", "--require-approval").returncode == 3
    )
    with Workflow(settings) as workflow:
        before = workflow.checkpoint_count("t-w")
    result = handoff(settings, "resume", "t-w")
    assert result.returncode == ExitCode.WAITING_FOR_HUMAN
    assert "is waiting for a human decision" in result.stderr
    with Workflow(settings) as workflow:
        assert workflow.checkpoint_count("t-w") == before
        assert workflow.pending("t-w") is not None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"action": 5}, "action"),
        ({"action": None}, "action"),
        ({"action": "maybe"}, "action"),
        ({"interrupt_id": "review-decision-s9"}, "interrupt_id"),
        ({"action": "revise", "answers": [{"question_id": "q-7", "text": "x"}]}, "answers"),
        ({"action": "reject"}, "reason"),
        ({"surprise": True}, "surprise"),
    ],
)
def test_invalid_decisions_are_refused_naming_the_field_and_the_thread_keeps_waiting(
    workflow: Workflow, change: dict[str, Any], field: str
) -> None:
    request = paused(workflow, "t-bad", questions=QUESTIONS)
    checkpoints = workflow.checkpoint_count("t-bad")
    decision: dict[str, Any] = {"interrupt_id": request.interrupt_id, "action": "approve", **change}
    if change.get("action") is None and "action" in change:
        del decision["action"]
    with pytest.raises(InvalidDecision, match=field):
        workflow.resume("t-bad", decision)
    assert workflow.pending("t-bad") == request
    assert workflow.checkpoint_count("t-bad") == checkpoints
    outcome = workflow.resume("t-bad", {"interrupt_id": request.interrupt_id, "action": "approve"})
    assert outcome.result_status == "partial", "approved, but the lunch question stays open"
    assert [error.field for error in outcome.errors] == ["questions.q-3"]


def test_the_graph_itself_refuses_an_invalid_resume_so_server_clients_are_covered_too(
    workflow: Workflow,
) -> None:
    request = paused(workflow, "t-raw")
    config = workflow.config("t-raw")
    wrong = {"interrupt_id": "approve-research-s999", "action": "approve"}
    with pytest.raises(ValidationError) as caught:
        workflow.graph.invoke(Command(resume=wrong), config, context=workflow.context)
    assert is_invalid_resume(caught.value) and "interrupt_id" in str(caught.value)
    assert workflow.pending("t-raw") == request, "nothing was saved; still waiting"


def test_code_before_the_interrupt_has_its_effects_once(workflow: Workflow) -> None:
    request = paused(workflow, "t-once")
    artifacts = {i: workflow.context.store.history(i) for i in workflow.context.store.ids()}
    before = nodes_run(workflow, "t-once")
    for _ in range(3):
        with pytest.raises(InvalidDecision):
            workflow.resume("t-once", {"interrupt_id": request.interrupt_id, "action": "abort"})
        assert workflow.pending("t-once") is not None
    assert nodes_run(workflow, "t-once") == before and "approve_research" not in before
    assert {i: workflow.context.store.history(i) for i in artifacts} == artifacts
    workflow.resume("t-once", {"interrupt_id": request.interrupt_id, "action": "approve"})
    approvals = [run for run in workflow.history("t-once") if run.node_id == "approve_research"]
    assert len(approvals) == 1
    assert [run.node_id for run in workflow.history("t-once")].count("research") == 1


def test_an_added_constraint_reaches_the_writer_and_the_reviewer_checks_it(
    workflow: Workflow,
) -> None:
    request = paused(workflow, "t-short")
    decision = {
        "interrupt_id": request.interrupt_id,
        "action": "revise",
        "constraints": ["at most 120 words"],
    }
    outcome = workflow.resume("t-short", decision)
    assert outcome.result_status == "completed"
    article = workflow.artifact("t-short", "article").decode()
    assert word_count(article) <= 120
    state = workflow.state("t-short")
    human = [c for c in state["handoff"].constraints if c.provenance.producer == "human"]
    assert [c.text for c in human] == ["at most 120 words"]
    assert state["draft"].word_count <= 120


def test_a_human_constraint_is_enforced_by_the_reviewer_against_a_writer_that_ignores_it(
    workflow: Workflow,
) -> None:
    class DeafWriter(SloppyWriter):
        def run(self, request: WriteRequest) -> Any:
            task = request.task
            loose = task.model_copy(
                update={"constraints": task.constraints.model_copy(update={"max_words": None})}
            )
            return self.real.run(replace(request, task=loose))

    context = workflow.context.with_agent("writer", DeafWriter(bad_rounds=0))
    with Workflow(workflow.settings, context=context) as deaf:
        request = paused(deaf, "t-deaf", budget={"max_review_rounds": 1})
        outcome = deaf.resume(
            "t-deaf",
            {
                "interrupt_id": request.interrupt_id,
                "action": "revise",
                "constraints": ["at most 40 words"],
            },
        )
    assert outcome.result_status == "partial"
    assert ErrorCode.CONSTRAINT_VIOLATED in {error.code for error in outcome.errors}


def test_an_answered_question_is_recorded_as_human_and_never_becomes_a_fact(
    workflow: Workflow,
) -> None:
    request = paused(workflow, "t-answer", questions=QUESTIONS)
    assert [question.id for question in request.open_questions] == ["q-3"]
    answer = "No reliable record of his lunch survives"
    decision = {
        "interrupt_id": request.interrupt_id,
        "action": "revise",
        "answers": [{"question_id": "q-3", "text": answer}],
    }
    assert workflow.resume("t-answer", decision).result_status == "completed"
    state = workflow.state("t-answer")
    [question] = state["handoff"].open_questions
    assert (question.id, question.answer) == ("q-3", answer)
    assert question.answered_by is not None and question.answered_by.producer == "human"
    bundle = state["research"]
    assert all("q-3" not in fact.answers for fact in bundle.facts)
    article = workflow.artifact("t-answer", "article").decode()
    assert "lunch" not in without_apparatus(article), "an answer is never written as a fact"
    assert f"q-3: {QUESTIONS[1]} (answered by a person, not by the sources: {answer})" in article
    assert all(bundle.fact(claim_id) for claim_id in CITATION.findall(article))


def test_reject_ends_rejected_with_the_reason_and_further_resumes_are_refused(
    workflow: Workflow,
) -> None:
    request = paused(workflow, "t-reject")
    reason = "sources are too thin"
    outcome = workflow.resume(
        "t-reject", {"interrupt_id": request.interrupt_id, "action": "reject", "reason": reason}
    )
    assert outcome.state == TaskState.REJECTED
    assert outcome.reason == reason
    assert outcome.errors[0].code == ErrorCode.HUMAN_REJECTED
    with pytest.raises(ThreadFinished, match="is complete"):
        workflow.resume("t-reject")
    with pytest.raises(ThreadFinished, match="is complete"):
        workflow.resume("t-reject", {"interrupt_id": request.interrupt_id, "action": "approve"})


def test_a_decision_for_a_thread_that_stopped_mid_run_is_refused(workflow: Workflow) -> None:
    context = workflow.context.with_agent("writer", SloppyWriter(bad_rounds=9))
    with Workflow(workflow.settings, context=context) as sloppy:
        task = sloppy.task(OBJECTIVE, budget={"max_review_rounds": 1})
        sloppy.graph.invoke(
            {"task": task},
            sloppy.config("t-mid"),
            context=sloppy.context,
            interrupt_before=["reviewer"],
        )
        with pytest.raises(NotWaiting, match="not waiting"):
            sloppy.resume("t-mid", {"interrupt_id": "approve-research-s3", "action": "approve"})


@pytest.mark.parametrize(
    ("action", "state", "result"),
    [
        ("accept_partial", TaskState.COMPLETED, "partial"),
        ("abort", TaskState.CANCELED, "failed"),
        ("grant_round", TaskState.COMPLETED, "completed"),
    ],
)
def test_review_escalation_offers_partial_another_round_or_abort(
    workflow: Workflow, action: str, state: TaskState, result: str
) -> None:
    context = workflow.context.with_agent("writer", SloppyWriter(bad_rounds=1))
    with Workflow(workflow.settings, context=context) as sloppy:
        task = sloppy.task(
            OBJECTIVE,
            budget={"max_review_rounds": 1},
            policies={"on_review_exhausted": "ask"},
        )
        first = sloppy.run(task, "t-escalate")
        assert first.state == TaskState.INPUT_REQUIRED
        request = first.human_request
        assert request is not None and request.request_kind == "review_exhausted"
        decision: dict[str, Any] = {"interrupt_id": request.interrupt_id, "action": action}
        if action == "abort":
            decision["reason"] = "not worth another round"
        outcome = sloppy.resume("t-escalate", decision)
    assert (outcome.state, outcome.result_status) == (state, result)
    if action == "grant_round":
        assert outcome.review_rounds == 2


def test_equal_pauses_on_two_threads_have_different_ids_naming_their_thread(
    workflow: Workflow,
) -> None:
    mine, theirs = paused(workflow, "t-mine"), paused(workflow, "t-theirs")
    assert (mine.thread_id, theirs.thread_id) == ("t-mine", "t-theirs")
    assert mine.interrupt_id.startswith("approve-research-s")  # the pause's kind, its step
    assert mine.interrupt_id.endswith(".t-mine") and theirs.interrupt_id.endswith(".t-theirs")
    assert mine.interrupt_id.removesuffix(".t-mine") == theirs.interrupt_id.removesuffix(
        ".t-theirs"
    )


def test_the_python_api_refuses_a_decision_for_another_thread_and_changes_nothing(
    workflow: Workflow,
) -> None:
    mine, theirs = paused(workflow, "t-mine"), paused(workflow, "t-theirs")
    checkpoints = workflow.checkpoint_count("t-mine")
    pending = workflow.saver.get_tuple(workflow.config("t-mine"))
    assert pending is not None
    with pytest.raises(InvalidDecision, match="is a decision for thread 't-theirs', not for this"):
        workflow.resume("t-mine", {"interrupt_id": theirs.interrupt_id, "action": "approve"})
    bare = mine.interrupt_id.removesuffix(".t-mine")  # the id as it was before threads named
    with pytest.raises(InvalidDecision, match=f"'{bare}' names no thread"):
        workflow.resume("t-mine", {"interrupt_id": bare, "action": "approve"})
    assert workflow.pending("t-mine") == mine
    assert workflow.checkpoint_count("t-mine") == checkpoints
    after = workflow.saver.get_tuple(workflow.config("t-mine"))
    assert after is not None and after.pending_writes == pending.pending_writes
    outcome = workflow.resume("t-mine", {"interrupt_id": mine.interrupt_id, "action": "approve"})
    assert outcome.result_status == "completed"
    assert workflow.pending("t-theirs") == theirs, "the other thread still waits"


def test_the_graph_refuses_a_resume_written_for_another_thread_so_server_clients_are_covered(
    workflow: Workflow,
) -> None:
    mine, theirs = paused(workflow, "t-mine"), paused(workflow, "t-theirs")
    for wrong, reason in (
        (theirs.interrupt_id, "is a decision for thread 't-theirs'"),
        (mine.interrupt_id.removesuffix(".t-mine"), "names no thread"),
    ):
        with pytest.raises(ValidationError) as caught:
            workflow.graph.invoke(
                Command(resume={"interrupt_id": wrong, "action": "approve"}),
                workflow.config("t-mine"),
                context=workflow.context,
            )
        assert is_invalid_resume(caught.value) and reason in str(caught.value)
        assert workflow.pending("t-mine") == mine, "nothing was saved; still waiting"


def test_a_decision_is_checked_once_at_the_door_it_comes_through(
    workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``handoff resume`` and ``Workflow.resume``: by the Workflow, before the node re-runs,
    and the pause takes it as admitted; a served client's resume: by the pause itself."""
    checks: list[str] = []

    def counted(where: str, check: Callable[..., Any]) -> Callable[..., Any]:
        def checking(*args: Any, **kwargs: Any) -> Any:
            checks.append(where)
            return check(*args, **kwargs)

        return checking

    monkeypatch.setattr(workflow_running, "check_decision", counted("door", check_decision))
    monkeypatch.setattr(cli_decisions, "check_decision", counted("cli", check_decision))
    monkeypatch.setattr(langgraph_types, "_validate_resume", counted("pause", validate_resume))
    monkeypatch.setattr(cli_base, "open_workflow", lambda **_: nullcontext(workflow))
    paused(workflow, "t-cli")
    result = CliRunner().invoke(cli, ["resume", "t-cli", "--approve"])
    assert result.exit_code == ExitCode.COMPLETED, result.output
    assert checks == ["door"] and workflow.pending("t-cli") is None
    checks.clear()
    by_api = paused(workflow, "t-api")
    workflow.resume("t-api", {"interrupt_id": by_api.interrupt_id, "action": "approve"})
    assert checks == ["door"] and workflow.pending("t-api") is None
    checks.clear()
    served = paused(workflow, "t-served")
    resume = {"interrupt_id": served.interrupt_id, "action": "approve"}
    workflow.graph.invoke(
        Command(resume=resume), workflow.config("t-served"), context=workflow.context
    )
    assert checks == ["pause"] and workflow.pending("t-served") is None


@pytest.mark.e2e
def test_handoff_resume_refuses_a_decision_file_written_for_another_thread_with_exit_2(
    settings: Settings, tmp_path: Path
) -> None:
    with Workflow(settings) as workflow:
        mine, theirs = paused(workflow, "t-mine"), paused(workflow, "t-theirs")
        checkpoints = workflow.checkpoint_count("t-mine")
    for_theirs = tmp_path / "theirs.json"
    for_theirs.write_text(json.dumps({"interrupt_id": theirs.interrupt_id, "action": "approve"}))
    refused = handoff(settings, "resume", "t-mine", "--decision-file", str(for_theirs))
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"error: invalid decision for {mine.interrupt_id!r}: interrupt_id: "
        f"{theirs.interrupt_id!r} is a decision for thread 't-theirs', not for this thread "
        f"'t-mine', whose open request is {mine.interrupt_id!r}"
    ]
    with Workflow(settings) as workflow:
        assert workflow.pending("t-mine") == mine
        assert workflow.checkpoint_count("t-mine") == checkpoints
    for_mine = tmp_path / "mine.json"
    for_mine.write_text(json.dumps({"interrupt_id": mine.interrupt_id, "action": "approve"}))
    decided = handoff(settings, "resume", "t-mine", "--decision-file", str(for_mine))
    assert decided.returncode == ExitCode.COMPLETED, decided.stderr
    again = handoff(settings, "resume", "t-mine", "--decision-file", str(for_mine))
    assert again.returncode == ExitCode.ALREADY_FINISHED, "a finished thread: not silently dropped"
