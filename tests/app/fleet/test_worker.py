"""The worker fleet: two `handoff worker` processes on one fresh PostgreSQL schema run 20
submitted threads, one worker is SIGKILLed inside a node, and every thread still finishes
with each node's work done once and the article a single process writes."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.exit_codes import ExitCode
from app.fleet import WORKFLOWS, Queue, run_thread
from app.fleet.fleet import Fleet
from app.fleet.jobs import QUEUE
from app.fleet.worker import requeue
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from contracts import TaskSpec, TaskState
from tests import forked
from tests.backends import admin, postgres_schema, sqlite_settings
from tests.cli import HANDOFF
from tests.conftest import OBJECTIVE

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

THREADS = 20
APPROVAL_EVERY = 4
"""Every fourth thread waits for approval, decided with `handoff submit --resume`."""
SECONDS = 240.0


def task(index: int) -> TaskSpec:
    return TaskSpec(
        task_id=f"fleet-{index}",
        objective=OBJECTIVE,
        policies={"require_approval": index % APPROVAL_EVERY == 0},
    )


def worker_env(url: str, tmp_path: Path) -> dict[str, str]:
    """The environment of workers and commands on database ``url``: none of the caller's
    HANDOFF_ settings, a one-second heartbeat."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    return env | {
        "HANDOFF_DATABASE_URL": url,
        "HANDOFF_DATA_DIR": str(tmp_path / "data"),
        "HANDOFF_CORPUS": f'["{BUNDLED_CORPUS}"]',
        "HANDOFF_WORKER_HEARTBEAT_SECONDS": "1",
    }


@pytest.fixture
def fleet_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A fresh schema, and the environment every worker and command of the test uses."""
    with postgres_schema("handoff_fleet") as url:
        yield worker_env(url, tmp_path)


def settings_of(env: dict[str, str], **fields: Any) -> Settings:
    """The settings of ``env`` for this process, with ``fields`` on top."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=env["HANDOFF_DATABASE_URL"],
        data_dir=Path(env["HANDOFF_DATA_DIR"]),
        corpus=[BUNDLED_CORPUS],
        **fields,
    )


def start_worker(env: dict[str, str], log: Path, **extra: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [str(HANDOFF), "worker", "--concurrency", "2"],
            env={**env, **extra},
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def schema_of(url: str) -> str:
    return url.rsplit("%3D", 1)[1]


def jobs(url: str) -> list[dict[str, object]]:
    with admin() as conn:
        conn.execute(f'SET search_path TO "{schema_of(url)}"')
        cursor = conn.execute(
            "SELECT id, lock, status::text, attempts, worker_id FROM procrastinate_jobs"
        )
        names = [column.name for column in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def wait_for(condition: object, what: str, timeout: float = SECONDS) -> None:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if callable(condition) and condition():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


def baseline_articles(tmp_path: Path) -> dict[bool, bytes]:
    """The article one process writes for each kind of task (with and without approval)."""
    found: dict[bool, bytes] = {}
    with Workflow(sqlite_settings(tmp_path / "baseline")) as workflow:
        for approval in (False, True):
            spec = TaskSpec(
                task_id="baseline", objective=OBJECTIVE, policies={"require_approval": approval}
            )
            thread = f"baseline-{approval}"
            outcome = workflow.run(spec, thread)
            if approval:
                request = workflow.pending(thread)
                assert request is not None
                outcome = workflow.resume(
                    thread, {"interrupt_id": request.interrupt_id, "action": "approve"}
                )
            assert outcome.result_status == "completed"
            found[approval] = workflow.artifact(thread, "article")
    return found


def test_two_workers_finish_twenty_threads_when_one_is_killed_inside_a_node(
    fleet_env: dict[str, str], tmp_path: Path
) -> None:
    url = fleet_env["HANDOFF_DATABASE_URL"]
    settings = settings_of(fleet_env)
    threads = [f"fleet-{index}" for index in range(THREADS)]
    with Workflow(settings) as workflow:
        for index, thread in enumerate(threads):
            assert Queue(workflow).submit(task(index), thread) == thread
        assert {job.label for job in map(Queue(workflow).job, threads) if job} == {"queued"}

    # Worker A holds every writer attempt it starts at a gate that never opens, so it is
    # killed inside a node, with its jobs half done; worker B works normally.
    gate = tmp_path / "never"
    doomed = start_worker(fleet_env, tmp_path / "a.log", HANDOFF_FAULT=f"wait:writer:{gate}")
    wait_for(lambda: any(job["status"] == "doing" for job in jobs(url)), "worker A to take a job")
    survivor = start_worker(fleet_env, tmp_path / "b.log")
    try:
        with Workflow(settings) as workflow:
            wait_for(
                lambda: any(
                    run.node_id == "writer" and run.status == "running"
                    for thread in threads
                    if workflow.threads_has(thread)
                    for run in workflow.history(thread)
                ),
                "worker A to be inside the writer",
            )
        held = [job for job in jobs(url) if job["status"] == "doing"]
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait(timeout=30)

        decided: set[str] = set()

        def decide_waiting() -> bool:
            with Workflow(settings) as workflow:
                for index, thread in enumerate(threads):
                    if index % APPROVAL_EVERY or thread in decided:
                        continue
                    if workflow.threads_has(thread) and workflow.pending(thread) is not None:
                        job = Queue(workflow).job(thread)
                        if job is not None and job.unfinished:
                            continue  # its pause is saved; the job is still returning
                        assert job is not None and job.label == "succeeded", (
                            f"{thread} waits for a person, yet its job is {job}"
                        )
                        result = forked.run(
                            ["submit", "--resume", thread, "--approve"], env=fleet_env, timeout=60
                        )
                        assert result.returncode == 0, result.stderr
                        decided.add(thread)
                return all(
                    workflow.threads_has(thread)
                    and workflow.outcome(thread).state == TaskState.COMPLETED
                    for thread in threads
                )

        wait_for(decide_waiting, "every thread to finish")
    finally:
        for process in (doomed, survivor):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        survivor.wait(timeout=60)
    assert survivor.returncode == 0, (tmp_path / "b.log").read_text()
    assert decided == {t for i, t in enumerate(threads) if i % APPROVAL_EVERY == 0}

    # The killed worker's jobs were taken again (attempts > 1) and every job succeeded.
    by_id = {job["id"]: job for job in jobs(url)}
    assert held and all(by_id[job["id"]]["attempts"] >= 2 for job in held)
    assert {job["status"] for job in by_id.values()} == {"succeeded"}

    killed_in = {str(job["lock"]) for job in held}
    articles = baseline_articles(tmp_path)
    with Workflow(settings) as workflow:
        for index, thread in enumerate(threads):
            outcome = workflow.outcome(thread)
            assert outcome.result_status == "completed", (thread, outcome)
            # A kill between a node's audit row and its checkpoint leaves a replay
            # (``reused``) on record: the work itself was done once.
            succeeded = Counter(
                (run.node_id, run.input_hash)
                for run in workflow.history(thread)
                if run.status == "succeeded" and not run.reused
            )
            assert succeeded and max(succeeded.values()) == 1, (thread, succeeded)
            replays = [run.node_id for run in workflow.history(thread) if run.reused]
            assert not replays or thread in killed_in, (thread, replays)
            approval = index % APPROVAL_EVERY == 0
            assert workflow.artifact(thread, "article") == articles[approval], thread

    with admin() as conn:
        conn.execute(f'SET search_path TO "{schema_of(url)}"')
        duplicates = conn.execute(
            "SELECT artifact_id, sha256, count(*) FROM handoff_artifact_revisions "
            "GROUP BY artifact_id, sha256 HAVING count(*) > 1"
        ).fetchall()
    assert duplicates == []


def test_submit_refuses_what_it_cannot_queue_and_queues_nothing(
    fleet_env: dict[str, str],
) -> None:
    def submit(*args: str, env: dict[str, str] = fleet_env) -> subprocess.CompletedProcess[str]:
        return forked.run(["submit", *args], env=env, timeout=60)

    first = submit(OBJECTIVE, "--thread", "q-1")
    assert first.returncode == 0 and first.stdout.strip() == "q-1", first.stderr
    again = submit(OBJECTIVE, "--thread", "q-1")
    assert again.returncode == ExitCode.THREAD_BUSY, again.stderr
    assert "'q-1' is queued" in again.stderr and "run job" in again.stderr
    both = submit(OBJECTIVE, "--resume", "q-1", "--approve")
    assert both.returncode == ExitCode.USAGE and "not both" in both.stderr
    stray = submit(OBJECTIVE, "--approve")
    assert stray.returncode == ExitCode.USAGE and "--resume" in stray.stderr
    unknown = submit("--resume", "nobody", "--approve")
    assert unknown.returncode == ExitCode.NOT_FOUND, unknown.stderr
    sqlite = {k: v for k, v in fleet_env.items() if k != "HANDOFF_DATABASE_URL"}
    embedded = submit(OBJECTIVE, env=sqlite)
    assert embedded.returncode == ExitCode.USAGE and "PostgreSQL" in embedded.stderr
    status = forked.run(["status", "q-1"], env=fleet_env)
    assert status.returncode == 0 and "queued" in status.stdout, status.stderr
    listed = forked.run(["threads"], env=fleet_env)
    assert listed.returncode == 0 and "q-1" in listed.stdout and "QUEUED" in listed.stdout
    waits = forked.run(
        ["run", OBJECTIVE, "--thread", "q-wait", "--require-approval"], env=fleet_env
    )
    assert waits.returncode == ExitCode.WAITING_FOR_HUMAN, waits.stderr
    with Workflow(settings_of(fleet_env)) as workflow:
        request = workflow.pending("q-wait")
    assert request is not None
    bare = submit("--resume", "q-wait")
    assert bare.returncode == ExitCode.USAGE, bare.stderr
    asked = f"needs a decision for {request.interrupt_id!r}: --approve, --constraint TEXT"
    assert asked in bare.stderr, bare.stderr
    assert '--reject --reason "…" or --decision-file' in bare.stderr, "hints from the pause"
    assert [job["lock"] for job in jobs(fleet_env["HANDOFF_DATABASE_URL"])] == ["q-1"]


def test_a_job_killed_before_its_first_step_was_saved_continues_its_thread(
    fleet_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between saving its input and saving its first step, a job leaves a thread
    whose state holds no task yet: the job's retry continues it, not refuses it."""
    url = fleet_env["HANDOFF_DATABASE_URL"]
    thread = "killed-early"
    killed = forked.run(
        ["run", OBJECTIVE, "--thread", thread],
        env={**fleet_env, "HANDOFF_FAULT": "kill:research:start"},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with admin() as conn:  # the state such a kill leaves: only the input checkpoint
        conn.execute(f'SET search_path TO "{schema_of(url)}"')
        forgotten = conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = %s AND (metadata->>'step')::int >= 0",
            (thread,),
        ).rowcount
        assert forgotten == 1
        conn.execute("DELETE FROM checkpoint_writes WHERE thread_id = %s", (thread,))
    settings = settings_of(fleet_env)
    with Workflow(settings) as workflow:
        assert workflow.threads_has(thread) and not workflow.state(thread).get("task")
        started = workflow.started_task(thread)
        assert started is not None and started.objective == OBJECTIVE
    for name, value in fleet_env.items():
        monkeypatch.setenv(name, value)
    try:
        assert run_thread(thread, started.model_dump(mode="json")) == TaskState.COMPLETED.value
    finally:
        WORKFLOWS.close_all()
    with Workflow(settings) as workflow:
        assert workflow.outcome(thread).result_status == "completed"
        finished = Counter(
            run.node_id for run in workflow.history(thread) if run.status == "succeeded"
        )
        assert finished["research"] == 1, finished


def test_a_worker_prints_one_line_per_job_with_its_thread_outcome_and_time(
    fleet_env: dict[str, str],
) -> None:
    def handoff(*args: str) -> subprocess.CompletedProcess[str]:
        return forked.run(args, env=fleet_env, timeout=240)

    assert handoff("submit", OBJECTIVE, "--thread", "j-done").returncode == 0
    assert handoff("submit", OBJECTIVE, "--thread", "j-asks", "--require-approval").returncode == 0
    first = handoff("worker", "--burst")
    assert first.returncode == 0, first.stderr
    with Workflow(settings_of(fleet_env)) as workflow:
        request = workflow.pending("j-asks")
    assert request is not None
    assert handoff("submit", "--resume", "j-asks", "--approve").returncode == 0
    second = handoff("worker", "--burst")
    lines = [
        line
        for line in (first.stderr + second.stderr).splitlines()
        if line.startswith("worker: run ") or line.startswith("worker: decide ")
    ]
    shapes = sorted(re.sub(r"in \d+\.\d\d s$", "in N s", line) for line in lines)
    assert shapes == [
        "worker: decide j-asks: TASK_STATE_COMPLETED in N s",
        "worker: run j-asks: TASK_STATE_INPUT_REQUIRED in N s",
        "worker: run j-done: TASK_STATE_COMPLETED in N s",
    ], first.stderr + second.stderr


def test_a_stalled_job_that_moved_on_before_its_requeue_is_reported_and_recovery_goes_on(
    fleet_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Found stalled, then finished or retried by its own worker before the re-queue (as
    right after an outage): the re-queue says so and returns, where it used to raise and
    end the worker with exit code 1. A job still ``doing`` is put back in the queue."""
    url = fleet_env["HANDOFF_DATABASE_URL"]
    settings = settings_of(fleet_env)
    with Workflow(settings) as workflow:
        Queue(workflow).submit(TaskSpec(task_id="moved", objective=OBJECTIVE), "moved")
    fleet = Fleet(settings)

    async def race() -> tuple[bool, bool]:
        async with fleet.app.open_async():
            manager = fleet.app.job_manager
            worker_id = await manager.register_worker()
            job = await manager.fetch_job(queues=[QUEUE], worker_id=worker_id)
            assert job is not None and job.lock == "moved"
            first = await requeue(manager, job)  # doing: put back
            second = await requeue(manager, job)  # already back in the queue
            return first, second

    with caplog.at_level(logging.WARNING, logger="app.fleet.worker"):
        assert asyncio.run(race()) == (True, False)
    assert [row["status"] for row in jobs(url)] == ["todo"]
    assert "was not re-queued: it left `doing`" in caplog.text
