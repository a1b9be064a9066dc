"""The example write tool: a task run with --export pauses for a person, writes once, or never.

Both backends (the ``workflow`` fixture); the crash tests are in ``test_export_crash.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.errors import InvalidDecision, ThreadFinished
from app.settings import Settings
from app.workflow import Workflow
from contracts import ARTIFACT_PATH, ErrorCode, RunOutcome, TaskState, WriteConfirmation
from tests.conftest import OBJECTIVE
from tests.routes import check_handoffs_follow_the_route


def exporting(workflow: Workflow, thread: str) -> RunOutcome:
    """A run of a task that asks for the export, up to the person's confirmation."""
    task = workflow.task(OBJECTIVE, policies={"export_article": True})
    return workflow.run(task, thread)


def confirmation(outcome: RunOutcome) -> WriteConfirmation:
    assert outcome.human_request is not None
    return WriteConfirmation.model_validate(outcome.human_request.details)


def decide(outcome: RunOutcome, action: str, **fields: str) -> dict[str, str]:
    assert outcome.human_request is not None
    return {"interrupt_id": outcome.human_request.interrupt_id, "action": action, **fields}


def settled(workflow: Workflow, thread: str, outcome: RunOutcome) -> RunOutcome:
    """The thread's end once every request after the decided one is approved.

    A project may add a pause after the export (a second write to confirm, docs/adapt.md);
    what these tests prove is the export's, so each later request is approved once. One
    asked again would be approved again, and the export's runs counted show it.
    """
    answered: set[str] = set()
    while outcome.state == TaskState.INPUT_REQUIRED:
        assert outcome.human_request is not None
        assert outcome.human_request.interrupt_id not in answered, outcome.human_request
        answered.add(outcome.human_request.interrupt_id)
        outcome = workflow.resume(thread, decide(outcome, "approve"))
    return outcome


def export_runs(workflow: Workflow, thread: str) -> list[object]:
    return [run for run in workflow.history(thread) if run.node_id == "export_article"]


def test_an_export_waits_for_a_person_who_sees_the_call_exactly_as_it_would_run(
    workflow: Workflow, settings: Settings
) -> None:
    paused = exporting(workflow, "t-export")
    assert paused.article_path == ARTIFACT_PATH.format(thread_id="t-export", name="article")
    target = settings.resolved_export_dir() / "t-export.md"
    assert paused.state == TaskState.INPUT_REQUIRED and paused.result_status is None
    assert paused.article is not None, "the article is published before the export is asked"
    assert paused.human_request is not None
    assert paused.human_request.request_kind == "confirm_write"
    assert paused.human_request.allowed_actions == ["approve", "reject"]
    shown = confirmation(paused)
    assert (shown.tool, shown.target) == ("export_article", str(target))
    assert shown.call_id == f"export-{paused.article.sha256[:16]}-r{paused.article.revision}"
    assert "t-export.md" in shown.arguments
    assert not target.exists()
    assert workflow.ledger.tool_effect("t-export", shown.call_id) is None


def test_an_approved_export_writes_the_article_once_and_is_receipted(
    workflow: Workflow, settings: Settings
) -> None:
    paused = exporting(workflow, "t-approve")
    call_id = confirmation(paused).call_id
    done = settled(workflow, "t-approve", workflow.resume("t-approve", decide(paused, "approve")))
    assert (done.state, done.result_status) == (TaskState.COMPLETED, "completed")
    exported = settings.resolved_export_dir() / "t-approve.md"
    assert exported.read_bytes() == workflow.artifact("t-approve", "article")
    assert done.reason == f"exported to {exported}"  # what the CLI prints: where it wrote
    effect = workflow.ledger.tool_effect("t-approve", call_id)
    assert effect is not None
    assert json.loads(effect)["output"]["path"] == str(exported)
    [run] = export_runs(workflow, "t-approve")
    [receipt] = run.tool_receipts  # type: ignore[attr-defined]
    assert (receipt.tool, receipt.call_id, receipt.cost, receipt.error) == (
        "export_article",
        call_id,
        1,
        None,
    )
    with pytest.raises(ThreadFinished):
        workflow.resume("t-approve", decide(paused, "approve"))
    check_handoffs_follow_the_route(workflow)  # the handoff to the export names its tool


def test_a_rejected_export_never_runs_and_the_reason_is_recorded(
    workflow: Workflow, settings: Settings
) -> None:
    paused = exporting(workflow, "t-reject")
    call_id = confirmation(paused).call_id
    with pytest.raises(InvalidDecision, match="reason is required"):
        workflow.resume("t-reject", decide(paused, "reject"))  # a rejection says why
    done = workflow.resume("t-reject", decide(paused, "reject", reason="not for publication"))
    assert (done.state, done.result_status) == (TaskState.COMPLETED, "completed")
    assert not (settings.resolved_export_dir() / "t-reject.md").exists()
    assert workflow.ledger.tool_effect("t-reject", call_id) is None
    last = workflow.state("t-reject")["decisions"].decisions[-1]
    assert (last.request_kind, last.action, last.reason) == (
        "confirm_write",
        "reject",
        "not for publication",
    )
    assert export_runs(workflow, "t-reject") == [], "the writing step never ran"


def test_a_failed_export_is_asked_again_and_a_declined_retry_ends_it_unexported(
    workflow: Workflow, settings: Settings
) -> None:
    target = settings.resolved_export_dir() / "t-declined.md"
    target.mkdir(parents=True)  # a directory where the file goes: the write fails
    paused = exporting(workflow, "t-declined")
    again = workflow.resume("t-declined", decide(paused, "approve"))
    assert again.state == TaskState.INPUT_REQUIRED and again.retryable
    assert again.human_request is not None and "failed" in again.human_request.question
    [failed] = again.errors
    assert (failed.code, failed.field) == (ErrorCode.TRANSIENT, "policies.export_article")
    done = workflow.resume("t-declined", decide(again, "reject", reason="leave it unexported"))
    assert (done.state, done.result_status, done.retryable) == (
        TaskState.COMPLETED,
        "completed",
        False,
    )
    [declined] = done.errors
    assert declined.code == ErrorCode.HUMAN_REJECTED
    assert "published but not exported" in declined.detail
    assert "leave it unexported" in declined.detail
    assert target.is_dir() and workflow.pending("t-declined") is None
    [run] = export_runs(workflow, "t-declined")  # the one failed write, not a second one
    [receipt] = run.tool_receipts  # type: ignore[attr-defined]
    assert receipt.error is not None and receipt.error.code == "retryable"


def test_a_task_that_asks_for_no_export_never_pauses_for_one(
    workflow: Workflow, tmp_path: Path
) -> None:
    done = workflow.run(workflow.task(OBJECTIVE), "t-plain")
    assert (done.state, done.human_request) == (TaskState.COMPLETED, None)
    assert export_runs(workflow, "t-plain") == []
