"""The thread's rules, whichever way in (docs/security.md).

A thread's task changes only through the audited revision path, and a pending decision is
answered or refused, never dropped. One waiting thread per test is offered a new task, or
asked to go on without its decision, by each in-process way in — Python, the CLI, the A2A
agent's message reading and the worker fleet's queue — and each refuses, naming the
thread, with the thread exactly as it was: same checkpoints, same task, same open request.
The served graph's ways (``langgraph dev``) are proven in
``tests/server/test_served_thread_rules.py``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Message, Role
from a2a.utils.errors import InvalidParamsError

from app.a2a.plans import plan_for
from app.errors import DecisionRequired, ThreadExists
from app.exit_codes import ExitCode
from app.fleet import Queue
from app.settings import Settings
from app.workflow import Workflow
from contracts import TaskState
from tests import forked
from tests.backends import backend_env
from tests.conftest import OBJECTIVE

THREAD = "t-rules"
OTHER_OBJECTIVE = "A completely different objective about bees"


@dataclass(frozen=True)
class Seen:
    """What a refusal must leave as it was."""

    checkpoints: int
    objective: str
    interrupt_id: str


def waiting(workflow: Workflow) -> Seen:
    """THREAD paused for approval, and what it looks like."""
    spec = workflow.task(OBJECTIVE, policies={"require_approval": True})
    outcome = workflow.run(spec, THREAD)
    assert outcome.state == TaskState.INPUT_REQUIRED and outcome.human_request is not None
    return seen(workflow)


def seen(workflow: Workflow) -> Seen:
    request = workflow.pending(THREAD)
    assert request is not None, "the thread no longer waits for its decision"
    return Seen(
        checkpoints=workflow.checkpoint_count(THREAD),
        objective=workflow.state(THREAD)["task"].objective,
        interrupt_id=request.interrupt_id,
    )


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return forked.run(args, env=backend_env(settings))


def a2a_message(part: object) -> Message:
    return Message(message_id="m-rules", role=Role.ROLE_USER, parts=[part], task_id=THREAD)  # type: ignore[list-item]


def python_new_task(workflow: Workflow) -> str:
    with pytest.raises(ThreadExists) as refused:
        workflow.run(workflow.task(OTHER_OBJECTIVE), THREAD)
    return refused.value.message


def cli_new_task(workflow: Workflow) -> str:
    result = cli(workflow.settings, "run", OTHER_OBJECTIVE, "--thread", THREAD)
    assert result.returncode == ExitCode.USAGE, result.stderr
    return result.stderr


def a2a_new_task(workflow: Workflow) -> str:
    part = new_data_part({"objective": OTHER_OBJECTIVE})
    with pytest.raises(InvalidParamsError) as refused:
        plan_for(workflow, a2a_message(part), running=False)
    return str(refused.value)


def fleet_new_task(workflow: Workflow) -> str:
    with pytest.raises(ThreadExists) as refused:
        Queue(workflow).submit(workflow.task(OTHER_OBJECTIVE), THREAD)
    return refused.value.message


NEW_TASK: dict[str, Callable[[Workflow], str]] = {
    "python": python_new_task,
    "cli": cli_new_task,
    "a2a": a2a_new_task,
    "fleet": fleet_new_task,
}


def ways_in(ways: dict[str, Callable[[Workflow], str]]) -> list[object]:
    """Each way in as a parameter; the CLI's starts a process, and is marked so."""
    return [pytest.param(way, marks=[pytest.mark.e2e] if way == "cli" else []) for way in ways]


@pytest.mark.parametrize("way_in", ways_in(NEW_TASK))
def test_no_way_in_gives_a_waiting_thread_a_new_task(way_in: str, workflow: Workflow) -> None:
    before = waiting(workflow)
    told = NEW_TASK[way_in](workflow)
    assert THREAD in told, told
    assert seen(workflow) == before
    assert OTHER_OBJECTIVE not in before.objective


def python_without_decision(workflow: Workflow) -> str:
    with pytest.raises(DecisionRequired) as refused:
        workflow.resume(THREAD)
    return refused.value.message


def cli_without_decision(workflow: Workflow) -> str:
    result = cli(workflow.settings, "resume", THREAD)
    assert result.returncode == ExitCode.WAITING_FOR_HUMAN, result.stderr
    return result.stderr


def a2a_without_decision(workflow: Workflow) -> str:
    with pytest.raises(InvalidParamsError) as refused:
        plan_for(workflow, a2a_message(new_text_part("go on")), running=False)
    return str(refused.value)


WITHOUT_DECISION: dict[str, Callable[[Workflow], str]] = {
    "python": python_without_decision,
    "cli": cli_without_decision,
    "a2a": a2a_without_decision,
}


@pytest.mark.parametrize("way_in", ways_in(WITHOUT_DECISION))
def test_no_way_in_goes_past_a_pending_decision_without_it(way_in: str, workflow: Workflow) -> None:
    before = waiting(workflow)
    told = WITHOUT_DECISION[way_in](workflow)
    assert before.interrupt_id in told or "HumanDecision" in told, told
    assert seen(workflow) == before
