"""A Workflow's guard is asked, inside the thread's lock, before every write to a thread.

The worker fleet's queue is one such guard (tests/app/fleet/test_races.py); here a guard
that holds chosen threads stands in for it, on the embedded default.
"""

from __future__ import annotations

import pytest

from app.errors import ThreadBusy
from app.settings import Settings
from app.storage.backends import Backend
from app.workflow import Workflow
from contracts import TaskState
from tests.conftest import OBJECTIVE


class Holding:
    """Holds the threads it is given, as the queue holds those with an unfinished job."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.asked: list[tuple[str, str]] = []

    def refuse_if_held(self, backend: Backend, thread_id: str, consequence: str) -> None:
        self.asked.append((thread_id, consequence))
        if thread_id in self.held:
            raise ThreadBusy(f"thread {thread_id!r} is held elsewhere; {consequence}")


def test_a_held_thread_is_not_run_resumed_or_cancelled_and_nothing_is_written(
    settings: Settings,
) -> None:
    guard = Holding()
    paused = {"policies": {"require_approval": True}}
    with Workflow(settings, guard=guard) as workflow:
        first = workflow.run(workflow.task(OBJECTIVE, **paused), "held")
        assert first.state == TaskState.INPUT_REQUIRED
        checkpoints = workflow.checkpoint_count("held")
        guard.held.add("held")
        with pytest.raises(ThreadBusy, match="nothing was resumed"):
            workflow.resume("held", {"action": "approve"})
        with pytest.raises(ThreadBusy, match="nothing was cancelled"):
            workflow.cancel("held", "no longer needed")
        guard.held.add("fresh")
        with pytest.raises(ThreadBusy, match="nothing was run"):
            workflow.run(OBJECTIVE, "fresh")
        assert workflow.checkpoint_count("held") == checkpoints
        assert workflow.threads() == ["held"]
    assert [thread for thread, _ in guard.asked] == ["held", "held", "held", "fresh"]


def test_a_workflow_without_a_guard_lets_every_thread_through(settings: Settings) -> None:
    with Workflow(settings) as workflow:
        assert workflow.guard is None
        workflow.refuse_if_held("any", "nothing was changed")
        assert workflow.run(OBJECTIVE, "plain").state == TaskState.COMPLETED
