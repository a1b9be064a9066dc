"""A running worker outlives a PostgreSQL outage: one line on stderr, then every job done.

The outage is the per-role one of ``test_postgres_outage`` (the shared server is never
stopped): the worker's role may not log in and every session it had is ended, for longer
than eight seconds. Two jobs are inside the writer when it begins (held there by a fault
gate, opened during the outage), four are still queued.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from app.exit_codes import ExitCode
from app.fleet import Queue
from app.settings import Settings
from app.workflow import Workflow
from contracts import TaskSpec, TaskState
from tests.app.fleet.test_worker import jobs, settings_of, start_worker, wait_for, worker_env
from tests.app.storage import test_postgres_outage as outages
from tests.app.test_concurrency import assert_single_writer_history
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.postgres

outage = outages.outage  # the role-and-schema sandbox fixture
Outage = outages.Outage
THREADS = 6
DOWN = 8.5
OUTAGE_CAUSES = ("not permitted to log in", "terminating connection due to administrator command")
"""What PostgreSQL says to a role shut out by ``Outage.begin``: its sessions end, logins fail."""
"""Seconds the database stays away: longer than the eight that used to end a worker."""


def _env(outage: Outage, tmp_path: Path, **extra: str) -> dict[str, str]:
    return worker_env(outage.url, tmp_path) | {"HANDOFF_DATABASE_TIMEOUT": "2", **extra}


def _settings(env: dict[str, str]) -> Settings:
    return settings_of(env, database_timeout=2.0)


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
    worker = start_worker(env, log, HANDOFF_FAULT=f"wait:writer:{gate}")
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
    banner, *said = besides_jobs(text)
    assert banner.startswith("worker: 2 at once on postgresql://"), text
    done = (
        re.match(r"^worker: run (\S+): TASK_STATE_COMPLETED in ", line)
        for line in text.splitlines()
    )
    finished = {match.group(1) for match in done if match}
    assert finished == set(threads), f"one line per job, each thread's run finished:\n{text}"
    assert len(said) == 1, f"expected one line about the outage:\n{text}"
    assert said[0].startswith("worker: database unavailable at postgresql://"), text
    assert "retrying with backoff" in said[0], text
    # Which face of the outage the worker meets first is a race: a session ended under it
    # or a login refused. Either way the line names the cause the server gave.
    assert any(cause in said[0] for cause in OUTAGE_CAUSES), text
    assert {job["status"] for job in jobs(outage.url)} == {"succeeded"}
    assert len(jobs(outage.url)) == THREADS
    assert any(int(str(job["attempts"])) > 1 for job in jobs(outage.url)), (
        "the jobs cut short by the outage were retried"
    )


JOB_LINE = re.compile(r"^worker: (run|decide) \S+: ")
"""The line a worker prints per job (``worker: run down-0: TASK_STATE_COMPLETED in 0.12 s``)."""


def besides_jobs(text: str) -> list[str]:
    """A worker's output without its one line per job: the banner, outages, errors."""
    return [line for line in text.splitlines() if not JOB_LINE.match(line)]


def _serving(outage: Outage, tmp_path: Path, **extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    """A worker started with one job queued, and its log; once the job is done it serves."""
    env = _env(outage, tmp_path, **extra)
    with Workflow(_settings(env)) as workflow:
        Queue(workflow).submit(TaskSpec(task_id="first", objective=OBJECTIVE), "first")
    log = tmp_path / "worker.log"
    return start_worker(env, log), log


def _first_job_done(outage: Outage) -> None:
    wait_for(lambda: {j["status"] for j in jobs(outage.url)} == {"succeeded"}, "the job")


def _assert_exited_9_in_one_line(code: int, log: Path, because: str) -> None:
    """Exit 9, and the log: the banner, one line about the outage, one error ending ``because``."""
    text = log.read_text()
    assert code == ExitCode.DATABASE_UNAVAILABLE, text
    _, outage_line, last = besides_jobs(text)
    assert outage_line.startswith("worker: database unavailable at"), text
    assert last.startswith("error: database unavailable at"), text
    assert last.endswith(because), text


@pytest.mark.e2e
def test_a_worker_told_to_stop_during_an_outage_exits_9_in_one_line(
    outage: Outage, tmp_path: Path
) -> None:
    worker, log = _serving(outage, tmp_path)
    try:
        _first_job_done(outage)
        outage.begin()
        time.sleep(3)  # the worker notices (heartbeat, listener) and waits
        assert worker.poll() is None, log.read_text()
    finally:
        code = _stop(worker)
        outage.end()
    _assert_exited_9_in_one_line(code, log, "the worker was told to stop while waiting for it")


@pytest.mark.e2e
def test_a_worker_gives_up_after_the_outage_limit_with_exit_9(
    outage: Outage, tmp_path: Path
) -> None:
    worker, log = _serving(outage, tmp_path, HANDOFF_WORKER_OUTAGE_SECONDS="3")
    try:
        # Serving, not starting: a worker that cannot reach the database at its start
        # exits 9 at once, without the outage line this test is about.
        _first_job_done(outage)
        outage.begin()
        code = worker.wait(timeout=60)
    finally:
        _stop(worker)
        outage.end()
    _assert_exited_9_in_one_line(
        code, log, "the worker stopped waiting after HANDOFF_WORKER_OUTAGE_SECONDS=3"
    )
