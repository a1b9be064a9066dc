"""A decision its node fails on leaves the thread waiting for a new one, the failure audited.

LangGraph replays the value a task's ``interrupt()`` was resumed with whenever the task
runs again: without the runner's help a node that fails on a valid decision fails the
same way on every resume, and the thread can never be decided again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from app.errors import DecisionRequired
from app.settings import Settings
from app.workflow import Workflow
from contracts import DecisionLog, TaskSpec, TaskState
from graphs import NodeCall, NodeResult, Wiring, node
from graphs.errors import ContractViolation
from graphs.human import ask, pause_request, recorded
from graphs.pauses import Action, Pause
from graphs.routing import STOP

GATE = Pause("gate", actions=(Action("approve"), Action("reject", needs=("reason",))))
REFUSED = "no reason given a node could act on"


class GateInput(TypedDict):
    """The task, and the decisions so far."""

    task: TaskSpec
    decisions: DecisionLog | None


class GateOutput(TypedDict, total=False):
    """The decision, recorded."""

    decisions: DecisionLog | None


@node("gate", reads=GateInput, writes=GateOutput, pauses=GATE)
def gate(call: NodeCall) -> NodeResult:
    """Ask; a rejection whose reason is the refused one fails the node (it is valid)."""
    request = pause_request(GATE, call.step, question="Go on?")
    decision = ask(GATE, request)
    if decision.reason == REFUSED:
        raise ContractViolation(
            f"gate cannot act on the reason {decision.reason!r}",
            node="gate",
            channel="decisions",
            fields=["reason"],
        )
    return NodeResult({"decisions": recorded(call.read("decisions"), decision, request, call.step)})


def route_after_gate(state: Mapping[str, Any]) -> Literal["__end__"]:
    """The end."""
    return STOP


WIRING_WITH_GATE: Wiring = ((gate, route_after_gate),)


def test_a_decision_its_node_fails_on_is_audited_and_the_thread_can_be_decided_again(
    settings: Settings,
) -> None:
    thread = "t-redecide"
    task = TaskSpec(task_id=thread, objective="Ask once, decide twice")
    with Workflow(settings, wiring=WIRING_WITH_GATE) as workflow:
        asked = workflow.run(task, thread).human_request
        assert asked is not None
        rejected = {"interrupt_id": asked.interrupt_id, "action": "reject", "reason": REFUSED}
        failed = workflow.resume(thread, rejected)
        assert failed.state == TaskState.INPUT_REQUIRED, "the thread waits for a new decision"
        again = workflow.pending(thread)
        assert again is not None and again.interrupt_id == asked.interrupt_id
        assert any(REFUSED in change for change in again.changes), "it says why it asks again"

        twice = workflow.resume(thread, rejected)  # the same decision fails the same way
        assert twice.state == TaskState.INPUT_REQUIRED
        approved = {"interrupt_id": asked.interrupt_id, "action": "approve"}
        done = workflow.resume(thread, approved)
        runs = [run for run in workflow.history(thread) if run.node_id == "gate"]
        log = workflow.state(thread)["decisions"]
    assert done.human_request is None and done.reason == "next step: none", "the run went on"
    assert [run.status for run in runs] == ["failed", "failed", "succeeded"]
    for run in runs[:2]:
        assert run.error is not None and run.error.kind == "invalid_output"
        assert "'reject'" in run.error.detail and REFUSED in run.error.detail
    assert [entry.action for entry in log.decisions] == ["approve"], "only what took effect"


def test_a_resume_without_a_decision_after_the_failure_keeps_asking(settings: Settings) -> None:
    thread = "t-redecide-bare"
    task = TaskSpec(task_id=thread, objective="Ask once, decide twice")
    with Workflow(settings, wiring=WIRING_WITH_GATE) as workflow:
        asked = workflow.run(task, thread).human_request
        assert asked is not None
        decision = {"interrupt_id": asked.interrupt_id, "action": "reject", "reason": REFUSED}
        workflow.resume(thread, decision)
        with Workflow(settings, wiring=WIRING_WITH_GATE) as reopened:
            waiting = reopened.pending(thread)
            done = reopened.resume(
                thread, {"interrupt_id": asked.interrupt_id, "action": "reject", "reason": "no"}
            )
            log = reopened.state(thread)["decisions"]
    assert waiting is not None and waiting.request_kind == "gate"
    assert done.human_request is None and done.reason == "next step: none", "the run went on"
    assert [(entry.action, entry.reason) for entry in log.decisions] == [("reject", "no")]


HOLDING = Pause(
    "holding",
    actions=(Action("approve"), Action("hold", inbox=("ignore",))),
)


@node("holds", reads=GateInput, writes=GateOutput, pauses=HOLDING)
def holds(call: NodeCall) -> NodeResult:
    """Ask; its expiry default, hold, fails the node (a node that cannot wait any longer)."""
    request = pause_request(HOLDING, call.step, question="Go on?")
    decision = ask(HOLDING, request)
    if decision.action == "hold":
        raise ContractViolation(
            "holds cannot hold any longer", node="holds", channel="decisions", fields=["action"]
        )
    return NodeResult({"decisions": recorded(call.read("decisions"), decision, request, call.step)})


def test_an_expired_request_whose_default_fails_its_node_waits_for_a_person_with_no_expiry(
    settings: Settings,
) -> None:
    thread = "t-expired-default"
    task = TaskSpec(task_id=thread, objective="Ask once", policies={"decision_timeout": "1h"})
    now = [datetime.now(UTC)]
    wiring: Wiring = ((holds, route_after_gate),)
    with (
        Workflow(settings, wiring=wiring) as plain,
        Workflow(
            settings, wiring=wiring, context=replace(plain.context, clock=lambda: now[0])
        ) as workflow,
    ):
        asked = workflow.run(task, thread).human_request
        assert asked is not None and asked.expires_at is not None
        now[0] += timedelta(days=1)
        failed = workflow.resume(thread)  # expired: answered with its default, which fails
        assert failed.state == TaskState.INPUT_REQUIRED
        again = workflow.pending(thread)
        assert again is not None and again.expires_at is None, "a person decides now"
        assert any("its default, hold, failed" in change for change in again.changes)
        with pytest.raises(DecisionRequired):
            workflow.resume(thread)  # not answered by the failing default again
        runs = [run for run in workflow.history(thread) if run.node_id == "holds"]
        assert [run.status for run in runs].count("failed") == 1
        approved = {"interrupt_id": again.interrupt_id, "action": "approve"}
        done = workflow.resume(thread, approved)
        log = workflow.state(thread)["decisions"]
    assert done.human_request is None and done.reason == "next step: none", "the run went on"
    assert [(entry.action, entry.decided_by) for entry in log.decisions] == [
        ("approve", "human")
    ], "the person's decision took effect, the failed default did not"
