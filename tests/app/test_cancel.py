"""Every waiting or stuck thread can be ended deliberately, and says why it ended."""

from __future__ import annotations

import pytest
from typing_extensions import TypedDict

from app.errors import InvalidDecision, ThreadFinished, ThreadNotFound
from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from app.workflow.running import ending_node
from contracts import ErrorCode, RunOutcome, TaskSpec, TaskState
from graphs import WIRING, NodeCall, NodeResult, node
from graphs.errors import IntegrityError, WiringError
from graphs.graph import route_after_finalize
from graphs.nodes.finalize import finalize
from graphs.routing import STOP, detour
from graphs.wiring import rerouted
from tests.app.store_faults import tamper
from tests.app.test_human_in_the_loop import handoff, paused
from tests.conftest import OBJECTIVE, nodes_run


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


def test_a_thread_stuck_on_tampered_inputs_can_be_ended(workflow: Workflow) -> None:
    request = paused(workflow, "t-stuck")
    bundle = workflow.state("t-stuck")["research"]
    tamper(workflow.context.store, bundle.sources[0].snapshot)
    decision = {"interrupt_id": request.interrupt_id, "action": "approve"}
    with pytest.raises(IntegrityError):
        workflow.resume("t-stuck", decision)
    outcome = workflow.cancel("t-stuck", "source store corrupted; rerun from scratch")
    assert workflow.outcome("t-stuck") == outcome
    assert outcome.state == TaskState.CANCELED


class IndexInput(TypedDict):
    task: TaskSpec
    outcome: RunOutcome | None


@node("index_article", reads=IndexInput, writes=IndexInput)
def index_article(call: NodeCall) -> NodeResult:
    return NodeResult({})


def test_a_thread_is_cancelled_when_a_node_follows_finalize(settings: Settings) -> None:
    """Finalize's route goes on to a step after publishing: the cancel still ends the thread."""
    after = detour(route_after_finalize, STOP, via="index_article")
    wiring = (*rerouted(WIRING, finalize, after), (index_article, STOP))
    with Workflow(settings, wiring=wiring) as workflow:
        paused(workflow, "t-cancel-after")
        outcome = workflow.cancel("t-cancel-after", "objective withdrawn")
        assert workflow.outcome("t-cancel-after") == outcome
        assert workflow.status("t-cancel-after").next_nodes == (), "no node is left to run"
        assert "index_article" not in nodes_run(workflow, "t-cancel-after")


def test_a_wiring_whose_every_route_goes_on_has_no_node_to_end_a_cancel_as() -> None:
    with pytest.raises(WiringError, match="no node of the wiring routes only to the end"):
        ending_node(((index_article, "finalize"), (finalize, route_after_finalize)))


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
