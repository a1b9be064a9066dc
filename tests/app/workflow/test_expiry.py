"""Expiring approvals: a request past the task's ``decision_timeout`` takes its pause's default.

The clock is the test's own (the run context's ``clock``), moved past the expiry instead
of waiting for it; the request's ``expires_at`` counts from when its step's checkpoint was
made, so it is the same on every read and every re-run of the paused node.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from langgraph.types import Command

from app.errors import RequestExpired, ThreadBusy, ThreadFinished
from app.workflow import Workflow
from contracts import HumanRequest, TaskState
from graphs.human import EXPIRED, request_in
from tests.conftest import OBJECTIVE

TIMEOUT = {"require_approval": True, "decision_timeout": "24h"}


class Clock:
    """The system's time moved by an offset the test sets."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed(workflow: Workflow, clock: Clock) -> Iterator[Workflow]:
    """The test's Workflow with the run context's clock replaced by ``clock``."""
    with Workflow(workflow.settings, context=replace(workflow.context, clock=clock)) as opened:
        yield opened


def waiting(workflow: Workflow, thread_id: str) -> HumanRequest:
    """Start a thread that waits for approval under the 24-hour policy; its request."""
    before = datetime.now(UTC)
    outcome = workflow.run(workflow.task(OBJECTIVE, policies=TIMEOUT), thread_id)
    assert outcome.state == TaskState.INPUT_REQUIRED
    request = workflow.pending(thread_id)
    assert request is not None and request.expires_at is not None
    assert (
        before + timedelta(hours=24)
        <= request.expires_at
        <= datetime.now(UTC) + timedelta(hours=24)
    )
    return request


def expired_decisions(workflow: Workflow, thread_id: str) -> list[str]:
    log = workflow.state(thread_id)["decisions"]
    return [decision.action for decision in log.decisions if decision.decided_by == EXPIRED]


def test_a_request_under_a_timeout_carries_one_expiry_in_status_and_interrupt(
    timed: Workflow,
) -> None:
    request = waiting(timed, "t-shown")
    interrupts = timed.graph.get_state(timed.config("t-shown")).tasks[0].interrupts
    assert request_in(interrupts[0].value).expires_at == request.expires_at
    assert timed.status("t-shown").current.human_request == request


def test_a_request_without_a_timeout_never_expires(timed: Workflow, clock: Clock) -> None:
    timed.run(timed.task(OBJECTIVE, policies={"require_approval": True}), "t-forever")
    request = timed.pending("t-forever")
    assert request is not None and request.expires_at is None
    clock.offset = timedelta(days=400)
    outcome = timed.resume("t-forever", {"interrupt_id": request.interrupt_id, "action": "approve"})
    assert outcome.state == TaskState.COMPLETED


def test_approving_before_the_expiry_completes_the_thread(timed: Workflow, clock: Clock) -> None:
    request = waiting(timed, "t-early")
    clock.offset = timedelta(hours=23, minutes=59)
    outcome = timed.resume("t-early", {"interrupt_id": request.interrupt_id, "action": "approve"})
    assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
    assert expired_decisions(timed, "t-early") == []


def test_approving_after_the_expiry_is_refused_and_the_default_recorded_once(
    timed: Workflow, clock: Clock
) -> None:
    request = waiting(timed, "t-late")
    clock.offset = timedelta(hours=24, seconds=1)
    with pytest.raises(RequestExpired, match="expired at .* can no longer be answered") as caught:
        timed.resume("t-late", {"interrupt_id": request.interrupt_id, "action": "approve"})
    assert caught.value.exit_code == 2
    assert caught.value.outcome.state == TaskState.REJECTED
    assert expired_decisions(timed, "t-late") == ["reject"]
    with pytest.raises(ThreadFinished):
        timed.resume("t-late", {"interrupt_id": request.interrupt_id, "action": "approve"})
    assert expired_decisions(timed, "t-late") == ["reject"]


def test_continuing_an_expired_thread_without_a_decision_records_the_default(
    timed: Workflow, clock: Clock
) -> None:
    waiting(timed, "t-swept")
    clock.offset = timedelta(days=2)
    outcome = timed.resume("t-swept")
    assert outcome.state == TaskState.REJECTED
    assert "expired" in (outcome.reason or "")
    assert expired_decisions(timed, "t-swept") == ["reject"]


def test_two_ways_in_at_the_same_moment_record_the_default_exactly_once(
    timed: Workflow, clock: Clock
) -> None:
    request = waiting(timed, "t-race")
    clock.offset = timedelta(days=1, minutes=1)
    start = threading.Barrier(2)
    ended: list[BaseException | str] = []

    def touch(decision: dict[str, str] | None) -> None:
        with Workflow(timed.settings, context=timed.context) as other:
            start.wait()
            try:
                ended.append(other.resume("t-race", decision).state.value)
            except (RequestExpired, ThreadBusy, ThreadFinished) as error:
                ended.append(error)

    approval = {"interrupt_id": request.interrupt_id, "action": "approve"}
    threads = [threading.Thread(target=touch, args=(arg,)) for arg in (approval, None)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(ended) == 2
    assert expired_decisions(timed, "t-race") == ["reject"]
    assert timed.outcome("t-race").state == TaskState.REJECTED


def test_a_late_decision_sent_to_the_graph_itself_is_answered_by_the_default(
    timed: Workflow, clock: Clock
) -> None:
    """What a served client does: resume the graph with a decision, past any door."""
    request = waiting(timed, "t-served")
    clock.offset = timedelta(hours=25)
    approval = {"interrupt_id": request.interrupt_id, "action": "approve"}
    timed.graph.invoke(Command(resume=approval), timed.config("t-served"), context=timed.context)
    assert expired_decisions(timed, "t-served") == ["reject"]
    assert timed.outcome("t-served").state == TaskState.REJECTED


def test_a_sweep_answers_only_the_expired_requests(timed: Workflow, clock: Clock) -> None:
    waiting(timed, "t-day")
    week = {"require_approval": True, "decision_timeout": "7d"}
    timed.run(timed.task(OBJECTIVE, policies=week), "t-week")
    clock.offset = timedelta(hours=24, minutes=1)
    swept = timed.sweep()
    assert [(thread, outcome.state) for thread, outcome in swept] == [("t-day", TaskState.REJECTED)]
    assert timed.pending("t-week") is not None
    assert timed.sweep() == []
    assert expired_decisions(timed, "t-day") == ["reject"]
