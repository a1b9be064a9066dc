"""Every waiting or stuck thread can be ended deliberately, and says why it ended."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from app.errors import InvalidDecision, ThreadFinished, ThreadNotFound
from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from app.workflow.running import ending_node
from contracts import ErrorCode, RunOutcome, TaskSpec, TaskState
from graphs import NodeCall, NodeResult, node
from graphs.errors import IntegrityError, WiringError
from graphs.nodes.finalize import finalize
from graphs.routing import STOP
from tests.app.store_faults import tamper
from tests.app.test_human_in_the_loop import handoff, paused
from tests.conftest import OBJECTIVE


def test_a_waiting_thread_is_cancelled_with_its_reason_and_can_no_longer_be_resumed(
    workflow: Workflow,
) -> None:
    request = paused(workflow, "t-cancel")
    outcome = workflow.cancel("t-cancel", "objective withdrawn", decided_by="ops")
    assert outcome.state == TaskState.CANCELED and outcome.result_status == "failed"
    assert outcome.errors[0].code == ErrorCode.HUMAN_ABORTED
    assert workflow.outcome("t-cancel") == outcome, "the end is recorded in the thread"
    assert workflow.pending("t-cancel") is None, "its request is withdrawn"
    assert workflow.status("t-cancel").next_nodes == ()
    with pytest.raises(ThreadFinished):
        workflow.resume("t-cancel", {"interrupt_id": request.interrupt_id, "action": "approve"})
    assert workflow.history("t-cancel")[-1].node_id == "cancel by ops"
    assert workflow.state("t-cancel")["research"] is not None, "what it stored is kept"


def test_a_thread_stuck_on_tampered_inputs_can_be_ended(own_store_workflow: Workflow) -> None:
    workflow = own_store_workflow  # the test damages its stored bytes
    request = paused(workflow, "t-stuck")
    bundle = workflow.state("t-stuck")["research"]
    tamper(workflow.context.store, bundle.sources[0].snapshot)
    decision = {"interrupt_id": request.interrupt_id, "action": "approve"}
    with pytest.raises(IntegrityError):
        workflow.resume("t-stuck", decision)
    outcome = workflow.cancel("t-stuck", "source store corrupted; rerun from scratch")
    assert workflow.outcome("t-stuck") == outcome
    assert outcome.state == TaskState.CANCELED


class CountInput(TypedDict):
    task: TaskSpec
    outcome: RunOutcome | None


@node("count_headings", reads=CountInput, writes=CountInput)
def count_headings(call: NodeCall) -> NodeResult:
    return NodeResult({})


def goes_on(state: Mapping[str, Any]) -> Literal["count_headings", "__end__"]:
    return "count_headings"


def test_a_cancel_is_recorded_as_a_node_whose_route_only_ends_the_run() -> None:
    """Not as finalize when a node follows it: the cancelled thread would go on to that node."""
    assert ending_node(((finalize, goes_on), (count_headings, STOP))) == "count_headings"
    with pytest.raises(WiringError, match="no node of the wiring routes only to the end"):
        ending_node(((count_headings, "finalize"), (finalize, goes_on)))


def test_cancel_refuses_a_blank_reason_an_unknown_or_an_ended_thread(workflow: Workflow) -> None:
    with pytest.raises(ThreadNotFound):
        workflow.cancel("t-nobody", "why not")
    workflow.run(workflow.task(OBJECTIVE), "t-done")
    with pytest.raises(ThreadFinished, match="already ended"):
        workflow.cancel("t-done", "too late")
    paused(workflow, "t-blank")
    with pytest.raises(InvalidDecision, match="reason is required"):
        workflow.cancel("t-blank", "  ")
    assert workflow.pending("t-blank") is not None, "a refused cancel changes nothing"


@pytest.mark.e2e
def test_the_cli_cancels_a_waiting_thread(settings: Settings) -> None:
    run = handoff(settings, "run", OBJECTIVE, "--thread", "t-cli-cancel", "--require-approval")
    assert run.returncode == ExitCode.WAITING_FOR_HUMAN, run.stderr
    cancelled = handoff(settings, "cancel", "t-cli-cancel", "--reason", "not needed")
    assert cancelled.returncode == ExitCode.COMPLETED, cancelled.stderr
    assert "TASK_STATE_CANCELED" in cancelled.stdout and "not needed" in cancelled.stdout
    again = handoff(settings, "resume", "t-cli-cancel", "--approve")
    assert again.returncode == ExitCode.ALREADY_FINISHED, again.stderr
    blank = handoff(settings, "cancel", "t-cli-cancel")
    assert blank.returncode == ExitCode.USAGE
