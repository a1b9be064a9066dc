"""A running worker outlives a PostgreSQL outage: one line on stderr, then every job done.

The outage is the per-role one of ``test_postgres_outage`` (the shared server is never
stopped): the worker's role may not log in and every session it had is ended, for longer
than eight seconds. Two jobs are inside the writer when it begins (held there by a fault
gate, opened during the outage), four are still queued.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.fleet import Queue
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from contracts import TaskSpec, TaskState
from tests.app.fleet.test_worker import HANDOFF, jobs, wait_for
from tests.app.storage import test_postgres_outage as outages
from tests.app.test_concurrency import assert_single_writer_history
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.postgres

outage = outages.outage  # the role-and-schema sandbox fixture
Outage = outages.Outage
THREADS = 6
DOWN = 8.5
"""Seconds the database stays away: longer than the eight that used to end a worker."""


def _env(outage: Outage, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    return env | {
        "HANDOFF_DATABASE_URL": outage.url,
        "HANDOFF_DATA_DIR": str(tmp_path / "data"),
        "HANDOFF_CORPUS": f'["{BUNDLED_CORPUS}"]',
        "HANDOFF_WORKER_HEARTBEAT_SECONDS": "1",
        "HANDOFF_DATABASE_TIMEOUT": "2",
        **extra,
    }


def _settings(env: dict[str, str]) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=env["HANDOFF_DATABASE_URL"],
        data_dir=Path(env["HANDOFF_DATA_DIR"]),
        corpus=[BUNDLED_CORPUS],
        database_timeout=2.0,
    )


def _worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [str(HANDOFF), "worker", "--concurrency", "2"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def _stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    return process.wait(timeout=60)


@pytest.mark.e2e
def test_a_worker_outlives_an_outage_and_finishes_every_queued_job(
    outage: Outage, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    env = _env(outage, tmp_path)
    settings = _settings(env)
    threads = [f"down-{index}" for index in range(THREADS)]
    with Workflow(settings) as workflow:
        for thread in threads:
            Queue(workflow).submit(TaskSpec(task_id=thread, objective=OBJECTIVE), thread)

    log = tmp_path / "worker.log"
    worker = _worker(env | {"HANDOFF_FAULT": f"wait:writer:{gate}"}, log)
    try:
        with Workflow(settings) as workflow:
            wait_for(
                lambda: (
                    sum(
                        run.node_id == "writer" and run.status == "running"
                        for thread in threads
                        if workflow.threads_has(thread)
                        for run in workflow.history(thread)
                    )
                    == 2
                ),
                "two jobs to be inside the writer",
                timeout=120,
            )
        outage.begin()
        time.sleep(DOWN / 2)
        gate.touch()  # the held writers go on, and find the database gone
        time.sleep(DOWN / 2)
        assert worker.poll() is None, log.read_text()
        outage.end()

        with Workflow(settings) as workflow:
            wait_for(
                lambda: all(
                    workflow.threads_has(thread)
                    and workflow.outcome(thread).state == TaskState.COMPLETED
                    for thread in threads
                ),
                "every thread to finish after the outage",
                timeout=180,
            )
            for thread in threads:
                assert workflow.outcome(thread).result_status == "completed", thread
                assert_single_writer_history(workflow, thread)
        assert worker.poll() is None, log.read_text()
    finally:
        code = _stop(worker)
    text = log.read_text()
    assert code == ExitCode.COMPLETED, text
    banner, *said = text.splitlines()
    assert banner.startswith("worker: 2 at once on postgresql://"), text
    assert len(said) == 1, f"expected one line about the outage:\n{text}"
    assert said[0].startswith("worker: database unavailable at postgresql://"), text
    assert "not permitted to log in" in said[0] and "retrying with backoff" in said[0], text
    assert {job["status"] for job in jobs(outage.url)} == {"succeeded"}
    assert len(jobs(outage.url)) == THREADS
    assert any(int(str(job["attempts"])) > 1 for job in jobs(outage.url)), (
        "the jobs cut short by the outage were retried"
    )


@pytest.mark.e2e
def test_a_worker_told_to_stop_during_an_outage_exits_9_in_one_line(
    outage: Outage, tmp_path: Path
) -> None:
    env = _env(outage, tmp_path)
    log = tmp_path / "worker.log"
    with Workflow(_settings(env)) as workflow:
        Queue(workflow).submit(TaskSpec(task_id="idle", objective=OBJECTIVE), "idle")
    worker = _worker(env, log)
    try:
        wait_for(lambda: {j["status"] for j in jobs(outage.url)} == {"succeeded"}, "the job")
        outage.begin()
        time.sleep(3)  # the worker notices (heartbeat, listener) and waits
        assert worker.poll() is None, log.read_text()
    finally:
        code = _stop(worker)
        outage.end()
    text = log.read_text()
    assert code == ExitCode.DATABASE_UNAVAILABLE, text
    _, outage_line, last = text.splitlines()  # the banner, the outage, the error
    assert outage_line.startswith("worker: database unavailable at"), text
    assert last.startswith("error: database unavailable at"), text
    assert last.endswith("the worker was told to stop while waiting for it"), text


@pytest.mark.e2e
def test_a_worker_gives_up_after_the_outage_limit_with_exit_9(
    outage: Outage, tmp_path: Path
) -> None:
    env = _env(outage, tmp_path, HANDOFF_WORKER_OUTAGE_SECONDS="3")
    log = tmp_path / "worker.log"
    with Workflow(_settings(env)) as workflow:
        Queue(workflow).submit(TaskSpec(task_id="first", objective=OBJECTIVE), "first")
    worker = _worker(env, log)
    try:
        # Serving, not starting: a worker that cannot reach the database at its start
        # exits 9 at once, without the outage line this test is about.
        wait_for(lambda: {j["status"] for j in jobs(outage.url)} == {"succeeded"}, "the job")
        outage.begin()
        code = worker.wait(timeout=60)
    finally:
        _stop(worker)
        outage.end()
    text = log.read_text()
    assert code == ExitCode.DATABASE_UNAVAILABLE, text
    _, outage_line, last = text.splitlines()  # the banner, the outage, the error
    assert outage_line.startswith("worker: database unavailable at"), text
    assert last.startswith("error: database unavailable at"), text
    assert last.endswith("the worker stopped waiting after HANDOFF_WORKER_OUTAGE_SECONDS=3"), text
