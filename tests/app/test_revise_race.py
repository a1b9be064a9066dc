"""A revision racing an approving resume on one waiting thread: exactly one proceeds.

Two spawned processes, one revising the thread and one approving its research, start each
attempt at a shared barrier; whichever takes the thread's lock first holds it, inside its
first node, until the other has been turned away (as ``test_concurrency`` does), so a lock
that let both in would show two winners. Three orders: the revision first, the resume
first (the other process starts only once the first is inside), and both at once, several
times. The refused call must have changed nothing, the state must be the winner's alone,
and the refused call, made again, must then proceed: both orders end at the revised task,
completed.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app.errors import ThreadBusy
from app.faults.points import with_faults
from app.settings import Settings
from app.workflow import Workflow
from bench._common import QUESTIONS
from contracts import DecisionLog, HumanRequest, RunOutcome, TaskSpec, TaskState
from graphs.boundary import read
from graphs.markdown import word_count
from tests.app.test_concurrency import (
    _collect,
    _stop,
    assert_linear_chain,
    assert_no_duplicate_revisions,
)
from tests.app.test_revise_crash import SHORTER
from tests.conftest import OBJECTIVE, nodes_run

pytestmark = pytest.mark.e2e
SPAWN = multiprocessing.get_context("spawn")
ACTIONS = ("revise", "resume")
RACES = 4
"""Races of the both-at-once order (either may win); each ordered race is run once."""
HOLD_SECONDS = 20
"""Longest a winner waits for the other to be refused: only a broken lock runs into it."""


def _hold_until_refused(inside: Any, refused: Any) -> tuple[Callable[[str], None], list[str]]:
    """A hook that holds the first node of each call until the other racer was refused.

    The first node starts inside the lock, so while it waits the thread is held; if the
    lock let both racers in, neither would see a refusal and both would proceed.
    """
    held: list[str] = []

    def hook(point: str) -> None:
        if held or not point.endswith(":start"):
            return
        held.append(point)
        inside.set()
        deadline = time.monotonic() + HOLD_SECONDS
        while refused.value < 1 and time.monotonic() < deadline:
            time.sleep(0.005)

    return hook, held


def _racer(
    settings: Settings,
    action: str,
    jobs: Any,
    results: Any,
    barrier: Any,
    inside: Any,
    refused: Any,
) -> None:
    with Workflow(settings) as outer:
        hook, held = _hold_until_refused(inside, refused)
        with Workflow(settings, context=with_faults(outer.context, hook)) as workflow:
            while (job := jobs.get()) is not None:
                thread_id, first, interrupt_id = job
                held.clear()
                barrier.wait(timeout=60)
                if first not in ("either", action):
                    inside.wait(60)  # the other goes first: start once it is inside the lock
                try:
                    if action == "revise":
                        outcome = workflow.revise(thread_id, SHORTER)
                    else:
                        approve = {"interrupt_id": interrupt_id, "action": "approve"}
                        outcome = workflow.resume(thread_id, approve)
                    kind = f"proceeded:{outcome.state.value}"
                except ThreadBusy:
                    with refused.get_lock():
                        refused.value += 1
                    kind = "busy"
                except Exception as error:  # reported to the test, which fails on it
                    kind = f"error:{type(error).__name__}:{error}"
                results.put((thread_id, os.getpid(), f"{action}:{kind}"))


@pytest.fixture
def racers(settings: Settings) -> Iterator[tuple[list[Any], Any, list[Any], Any, Any]]:
    """One process per action, each with its own jobs queue and Workflow."""
    jobs = [SPAWN.Queue() for _ in ACTIONS]
    results = SPAWN.Queue()
    barrier = SPAWN.Barrier(len(ACTIONS))
    inside = SPAWN.Event()
    refused = SPAWN.Value("i", 0)
    processes = [
        SPAWN.Process(
            target=_racer,
            args=(settings, action, job, results, barrier, inside, refused),
            daemon=True,
        )
        for action, job in zip(ACTIONS, jobs, strict=True)
    ]
    for process in processes:
        process.start()
    try:
        yield jobs, results, processes, inside, refused
    finally:
        _stop(jobs, processes)


def waiting_thread(workflow: Workflow, thread_id: str) -> HumanRequest:
    """A thread paused for approval of its research (version 1); its open request."""
    task = workflow.task(
        OBJECTIVE,
        questions=[QUESTIONS[0]],
        constraints={"max_words": 400},
        policies={"require_approval": True},
    )
    workflow.run(task, thread_id)
    request = workflow.pending(thread_id)
    assert request is not None and request.request_kind == "approve_research"
    return request


def state_of(workflow: Workflow, thread_id: str) -> tuple[TaskSpec, list[str], RunOutcome]:
    """The thread's task, the actions of its recorded decisions, and its outcome."""
    values = workflow.graph.get_state(workflow.config(thread_id)).values
    task = read(values, "task", TaskSpec, node="test")
    log = read(values, "decisions", DecisionLog, node="test")
    assert task is not None
    actions = [decision.action for decision in log.decisions] if log else []
    return task, actions, workflow.outcome(thread_id)


def approve(workflow: Workflow, thread_id: str) -> RunOutcome:
    request = workflow.pending(thread_id)
    assert request is not None
    return workflow.resume(thread_id, {"interrupt_id": request.interrupt_id, "action": "approve"})


def check_revision_won(workflow: Workflow, thread_id: str, withdrawn: HumanRequest) -> None:
    """Version 2 waits for its own approval; the approval of version 1 left no trace."""
    task, actions, _ = state_of(workflow, thread_id)
    assert task.task_version == 2 and actions == ["revise"]
    request = workflow.pending(thread_id)
    assert request is not None and request.interrupt_id != withdrawn.interrupt_id
    nodes = nodes_run(workflow, thread_id)
    assert nodes.count("revise_task") == 1 and "approve_research" not in nodes
    assert approve(workflow, thread_id).result_status == "completed"  # the loser, again


def check_resume_won(workflow: Workflow, thread_id: str) -> None:
    """Version 1 was approved and completed; the revision left no trace."""
    task, actions, outcome = state_of(workflow, thread_id)
    assert task.task_version == 1 and actions == ["approve"]
    assert outcome.result_status == "completed" and workflow.pending(thread_id) is None
    assert "revise_task" not in nodes_run(workflow, thread_id)
    revised = workflow.revise(thread_id, SHORTER)  # the loser, again
    assert revised.state == TaskState.INPUT_REQUIRED, revised
    assert approve(workflow, thread_id).result_status == "completed"


@pytest.mark.parametrize("first", ["revise", "resume", "either"])
def test_a_revision_racing_an_approving_resume_exactly_one_proceeds_the_other_changes_nothing(
    settings: Settings,
    racers: tuple[list[Any], Any, list[Any], Any, Any],
    first: str,
) -> None:
    jobs, results, processes, inside, refused = racers
    with Workflow(settings) as workflow:
        for race in range(RACES if first == "either" else 1):
            thread_id = f"t-revise-race-{race}"
            request = waiting_thread(workflow, thread_id)
            inside.clear()
            with refused.get_lock():
                refused.value = 0
            for job in jobs:
                job.put((thread_id, first, request.interrupt_id))
            kinds = sorted(kind for _, _, kind in _collect(results, len(ACTIONS), processes))
            assert sorted(kind.split(":")[1] for kind in kinds) == ["busy", "proceeded"], (
                race,
                kinds,
            )
            winner = next(kind.split(":")[0] for kind in kinds if ":proceeded:" in kind)
            if first != "either":
                assert winner == first, kinds

            assert_linear_chain(workflow, thread_id)
            if winner == "revise":
                check_revision_won(workflow, thread_id, request)
            else:
                check_resume_won(workflow, thread_id)
            task, _, outcome = state_of(workflow, thread_id)
            assert task.task_version == 2 and task.constraints.max_words == 150
            assert outcome.result_status == "completed" and outcome.article is not None
            assert word_count(workflow.artifact(thread_id, "article").decode()) <= 150
            assert not [run for run in workflow.history(thread_id) if run.status == "running"]
            assert_linear_chain(workflow, thread_id)
            assert_no_duplicate_revisions(workflow, thread_id)
