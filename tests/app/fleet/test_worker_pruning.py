"""A fleet worker applies HANDOFF_RETENTION_* as it starts and then on its schedule, and the
prune it runs leaves a thread the queue has an unfinished job of."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.fleet.fleet import Fleet
from app.fleet.jobs import RUN
from app.fleet.worker import prune, prune_every
from app.settings import Settings
from app.workflow import Workflow
from contracts import TaskSpec, TaskState
from tests import forked
from tests.backends import backend_env, backend_settings
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.postgres


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    """A fresh schema; threads that ended any time ago are due (``0s``)."""
    with backend_settings("postgres", tmp_path / "data") as chosen:
        yield chosen.with_overrides(model="offline", fault=None, retention_older_than="0s")


def ended(settings: Settings, *threads: str) -> None:
    with Workflow(settings) as workflow:
        for thread in threads:
            assert workflow.run(OBJECTIVE, thread).state == TaskState.COMPLETED


def threads(settings: Settings) -> list[str]:
    with Workflow(settings, read_only=True) as workflow:
        return workflow.threads()


@pytest.mark.e2e  # the queue library starts a process
def test_the_workers_prune_leaves_a_thread_the_queue_has_a_job_of(settings: Settings) -> None:
    ended(settings, "done", "queued")
    task = TaskSpec(task_id="again", objective=OBJECTIVE).model_dump(mode="json")
    job = Fleet(settings).defer(RUN, "queued", task=task)
    report = prune(settings)
    assert report is not None
    assert [thread.thread_id for thread in report.pruned] == ["done"]
    [(thread, why)] = report.kept
    assert thread == "queued" and f"job {job} (queued)" in why and "not pruned" in why
    assert threads(settings) == ["queued"]


def test_a_worker_prunes_as_it_starts_and_then_every_interval_and_never_when_unset(
    settings: Settings,
) -> None:
    unset = settings.with_overrides(retention_older_than=None)
    asyncio.run(asyncio.wait_for(prune_every(unset, 0.01), timeout=5))  # returns at once
    ended(settings, "first")

    async def gone(thread: str) -> None:
        deadline = time.monotonic() + 60
        while thread in await asyncio.to_thread(threads, settings):
            assert time.monotonic() < deadline, f"{thread} was never pruned"
            await asyncio.sleep(0.1)

    async def schedule() -> None:
        pruning = asyncio.create_task(prune_every(settings, 0.5))
        try:
            await gone("first")  # the prune as the worker starts
            await asyncio.to_thread(ended, settings, "second")
            await gone("second")  # a later one
        finally:
            pruning.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pruning

    asyncio.run(schedule())


@pytest.mark.e2e
def test_handoff_worker_prunes_as_it_starts_even_in_a_burst_with_no_job(
    settings: Settings,
) -> None:
    ended(settings, "old")
    env = backend_env(settings) | {"HANDOFF_RETENTION_OLDER_THAN": "0s"}
    worker = forked.run(["worker", "--burst"], env=env)
    assert worker.returncode == 0, worker.stderr
    assert "worker: prune: 1 threads older than 0s" in worker.stderr, worker.stderr
    assert threads(settings) == []
