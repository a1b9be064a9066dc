"""A fleet worker answers expired requests with their pause's default, as it starts and then
every HANDOFF_SWEEP_SECONDS, so a request nobody comes back to still ends."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.fleet.outage import OutageWatch
from app.fleet.worker import sweep_every
from app.settings import Settings
from app.workflow import Workflow
from contracts import TaskState
from graphs.human import EXPIRED
from tests import forked
from tests.backends import backend_env, backend_settings
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.postgres
SHORT = {"require_approval": True, "decision_timeout": "1s"}


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    with backend_settings("postgres", tmp_path / "data") as chosen:
        yield chosen.with_overrides(model="offline", fault=None)


def expired(settings: Settings, *threads: str) -> None:
    """Threads waiting for approval under a one-second timeout, waited out."""
    with Workflow(settings) as workflow:
        for thread in threads:
            workflow.run(workflow.task(OBJECTIVE, policies=SHORT), thread)
        requests = [workflow.pending(thread) for thread in threads]
    deadline = max(request.expires_at for request in requests if request and request.expires_at)
    time.sleep(max(0.0, (deadline - datetime.now(UTC)).total_seconds()) + 0.1)


def answered_by_policy(settings: Settings, thread: str) -> bool:
    with Workflow(settings, read_only=True) as workflow:
        if workflow.outcome(thread).state != TaskState.REJECTED:
            return False
        log = workflow.state(thread)["decisions"]
    return [(d.action, d.decided_by) for d in log.decisions] == [("reject", EXPIRED)]


def test_a_worker_sweeps_as_it_starts_and_then_every_interval(settings: Settings) -> None:
    expired(settings, "first")
    watch = OutageWatch(settings.resolved_database_url(), 60)

    async def answered(thread: str) -> None:
        deadline = time.monotonic() + 60
        while not await asyncio.to_thread(answered_by_policy, settings, thread):
            assert time.monotonic() < deadline, f"{thread} was never swept"
            await asyncio.sleep(0.1)

    async def schedule() -> None:
        sweeping = asyncio.create_task(
            sweep_every(settings.with_overrides(sweep_seconds=0.5), watch)
        )
        try:
            await answered("first")  # the sweep as the worker starts
            await asyncio.to_thread(expired, settings, "second")
            await answered("second")  # a later one
        finally:
            sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeping

    asyncio.run(schedule())


@pytest.mark.e2e
def test_handoff_worker_sweeps_as_it_starts_even_in_a_burst_with_no_job(
    settings: Settings,
) -> None:
    expired(settings, "waiting")
    worker = forked.run(["worker", "--burst"], env=backend_env(settings))
    assert worker.returncode == 0, worker.stderr
    assert "sweep: thread waiting expired unanswered: TASK_STATE_REJECTED" in worker.stderr, (
        worker.stderr
    )
    assert answered_by_policy(settings, "waiting")
