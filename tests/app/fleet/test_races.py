"""The queue is one of the ways into a thread: races against it drop nothing.

A live worker takes the jobs while, each round, contenders hit the same thread at once:
``run --thread X``, ``resume``, ``cancel`` and ``submit`` against a queued X (every one
refused, saying why, and X's queued task is what ran), and two different decisions for one
waiting thread (exactly one queued, the other refused naming it, and ``status`` shows the
job that ran). The first rounds go through the CLI, the rest through the Python API the
CLI calls (cheaper: no process start per contender).
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from app.errors import (
    DecisionConflict,
    ThreadBusy,
    ThreadExists,
    ThreadFinished,
    ThreadQueued,
)
from app.exit_codes import ExitCode
from app.fleet import Queue, QueuedDecision, fleet_workflow, recorded_decisions
from app.workflow import Workflow
from contracts import TaskSpec, TaskState
from tests.app.fleet import test_worker
from tests.app.fleet.test_worker import HANDOFF, jobs, settings_of, start_worker, wait_for
from tests.app.test_concurrency import assert_single_writer_history
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.postgres

fleet_env = test_worker.fleet_env  # a fresh schema and the environment of its commands
ROUNDS = 20
CLI_ROUNDS = 2
REFUSED = (ThreadQueued, ThreadBusy, ThreadExists, ThreadFinished)
"""Why a contender may be turned away: the job holds X, or it ran and X has ended."""


def _cli(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(HANDOFF), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def worker(fleet_env: dict[str, str], tmp_path: Path) -> Iterator[Path]:
    """A live worker for the whole test; yields its log."""
    log = tmp_path / "worker.log"
    with Workflow(settings_of(fleet_env)):
        pass  # the tables exist before anything races on them
    process = start_worker(fleet_env, log)
    try:
        yield log
    finally:
        process.terminate()
        assert process.wait(timeout=60) == ExitCode.COMPLETED, log.read_text()


def _race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` at once (a barrier), each result or the exception it raised."""
    barrier = threading.Barrier(len(calls))

    def contend(call: Callable[[], Any]) -> Any:
        barrier.wait()
        try:
            return call()
        except Exception as error:  # what the contender was told is the result
            return error

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(contend, calls))


def _finished(workflow: Workflow, threads: list[str]) -> Callable[[], bool]:
    def done() -> bool:
        return all(
            (job := Queue(workflow).job(thread)) is not None and not job.unfinished
            for thread in threads
        )

    return done


@pytest.mark.e2e
def test_nothing_races_past_a_queued_thread(
    fleet_env: dict[str, str], worker: Path, tmp_path: Path
) -> None:
    settings = settings_of(fleet_env)
    threads = [f"race-{index}" for index in range(ROUNDS)]
    refusals: list[str] = []
    with ExitStack() as stack:
        main, *contenders = (stack.enter_context(fleet_workflow(settings)) for _ in range(5))
        pace = random.Random(7)
        for index, thread in enumerate(threads):
            Queue(main).submit(TaskSpec(task_id=thread, objective=OBJECTIVE), thread)
            job = Queue(main).job(thread)
            assert job is not None and job.unfinished
            time.sleep(pace.choice([0, 0, 0.05, 0.2, 0.5]))  # hit it queued, or running
            if index < CLI_ROUNDS:
                processes = [
                    _cli(fleet_env, "run", "Something else", "--thread", thread),
                    _cli(fleet_env, "resume", thread),
                    _cli(fleet_env, "cancel", thread, "--reason", "race"),
                    _cli(fleet_env, "submit", "Something else", "--thread", thread),
                ]
                for process in processes:
                    _, stderr = process.communicate(timeout=120)
                    assert process.returncode in (
                        ExitCode.THREAD_BUSY,
                        ExitCode.USAGE,  # ThreadExists: the job ran and made the thread
                        ExitCode.ALREADY_FINISHED,
                    ), (process.args, process.returncode, stderr)
                    assert stderr.startswith("error: ") and thread in stderr, stderr
                    if process.returncode == ExitCode.THREAD_BUSY and "queued" in stderr:
                        assert f"job {job.job_id} (" in stderr, stderr
                    refusals.append(stderr)
                continue
            other = TaskSpec(task_id=f"{thread}-other", objective="Something else")
            run, resume, cancel, submit = contenders
            results = _race(
                [
                    partial(run.run, other, thread),
                    partial(resume.resume, thread),
                    partial(cancel.cancel, thread, "race"),
                    partial(Queue(submit).submit, other, thread),
                ]
            )
            for result in results:
                assert isinstance(result, REFUSED), (thread, result)
                assert thread in result.message, result.message
                if isinstance(result, ThreadQueued):
                    assert result.job_id == job.job_id and f"job {job.job_id} (" in result.message
                refusals.append(result.message)
        assert any("is queued for the worker fleet" in text for text in refusals)

        wait_for(_finished(main, threads), "every queued job to finish")
        for thread in threads:
            outcome = main.outcome(thread)
            assert outcome.state == TaskState.COMPLETED, (thread, outcome)
            assert outcome.task_id == thread, "the queued task is the one that ran"
            assert_single_writer_history(main, thread)
    by_thread = [job["lock"] for job in jobs(fleet_env["HANDOFF_DATABASE_URL"])]
    assert sorted(by_thread) == sorted(threads), "one job per thread, no second one queued"
    assert {job["status"] for job in jobs(fleet_env["HANDOFF_DATABASE_URL"])} == {"succeeded"}


def _decide(workflow: Workflow, thread: str, action: str) -> QueuedDecision:
    """What ``handoff submit --resume`` does: bind the flags to the request it reads."""
    raw: dict[str, Any] = {"action": action, "reason": "no" if action == "reject" else None}
    request = workflow.pending(thread)
    if request is not None:
        raw["interrupt_id"] = request.interrupt_id
    return Queue(workflow).submit_decision(thread, raw)


@pytest.mark.e2e
def test_two_decisions_for_one_request_one_is_queued_and_the_other_names_it(
    fleet_env: dict[str, str], worker: Path
) -> None:
    settings = settings_of(fleet_env)
    conflicts = [f"decide-{index}" for index in range(ROUNDS)]
    twins = [f"twin-{index}" for index in range(4)]
    with ExitStack() as stack:
        main, one, other = (stack.enter_context(fleet_workflow(settings)) for _ in range(3))
        for thread in conflicts + twins:
            spec = TaskSpec(
                task_id=thread, objective=OBJECTIVE, policies={"require_approval": True}
            )
            Queue(main).submit(spec, thread)
        wait_for(_finished(main, conflicts + twins), "every thread to pause for approval")
        assert all(main.pending(thread) is not None for thread in conflicts + twins)

        winners: dict[str, tuple[str, int]] = {}
        for index, thread in enumerate(conflicts):
            if index < CLI_ROUNDS:
                approve = _cli(fleet_env, "submit", "--resume", thread, "--approve")
                reject = _cli(fleet_env, "submit", "--resume", thread, "--reject", "--reason", "no")
                said = {}
                for action, process in (("approve", approve), ("reject", reject)):
                    stdout, stderr = process.communicate(timeout=120)
                    said[action] = (process.returncode, stdout, stderr)
                [(won, (_, stdout, _))] = [(a, s) for a, s in said.items() if s[0] == 0]
                [(lost, (code, _, stderr))] = [(a, s) for a, s in said.items() if s[0] != 0]
                assert stdout.startswith(f"queued: {won} for thread {thread} (job "), said
                job_id = int(stdout.split("(job ", 1)[1].split(")", 1)[0])
                assert code == ExitCode.USAGE, said
                assert f"already answered by {won} (decide job {job_id} (" in stderr, said
                assert f"this {lost} was not queued" in stderr, said
                winners[thread] = (won, job_id)
                continue
            first, second = _race(
                [
                    partial(_decide, one, thread, "approve"),
                    partial(_decide, other, thread, "reject"),
                ]
            )
            results = {"approve": first, "reject": second}
            [(won, queued)] = [(a, r) for a, r in results.items() if isinstance(r, QueuedDecision)]
            [(lost, refusal)] = [(a, r) for a, r in results.items() if a != won]
            assert not queued.duplicate and queued.decision.action == won
            assert isinstance(refusal, DecisionConflict), (thread, refusal)
            assert refusal.job_id == queued.job_id, (thread, refusal.message)
            assert f"decide job {queued.job_id} (" in refusal.message
            assert f"this {lost} was not queued" in refusal.message
            winners[thread] = (won, queued.job_id)

        for thread in twins:  # the same decision twice: queued once
            first, second = _race(
                [
                    partial(_decide, one, thread, "approve"),
                    partial(_decide, other, thread, "approve"),
                ]
            )
            assert isinstance(first, QueuedDecision) and isinstance(second, QueuedDecision)
            assert first.job_id == second.job_id and {first.duplicate, second.duplicate} == {
                True,
                False,
            }
            winners[thread] = ("approve", first.job_id)

        wait_for(_finished(main, conflicts + twins), "every decision to be applied")
        for thread, (won, job_id) in winners.items():
            job = Queue(main).job(thread)
            assert job is not None and (job.job_id, job.status) == (job_id, "succeeded"), job
            applied = recorded_decisions(main.state(thread))
            assert [entry["action"] for entry in applied.values()] == [won], (thread, applied)
            if won == "approve":
                assert main.outcome(thread).result_status == "completed", thread
    decisions = [
        job["lock"]
        for job in jobs(fleet_env["HANDOFF_DATABASE_URL"])
        if job["lock"] in winners and int(str(job["id"])) == winners[str(job["lock"])][1]
    ]
    assert sorted(decisions) == sorted(winners), "the job that ran is the one accepted"
    decide_jobs = [
        job
        for job in jobs(fleet_env["HANDOFF_DATABASE_URL"])
        if int(str(job["id"])) in {job_id for _, job_id in winners.values()}
    ]
    assert len(decide_jobs) == len(winners)
    per_thread = {str(job["lock"]) for job in jobs(fleet_env["HANDOFF_DATABASE_URL"])}
    assert per_thread == set(winners)
    counts = [
        sum(1 for job in jobs(fleet_env["HANDOFF_DATABASE_URL"]) if job["lock"] == thread)
        for thread in winners
    ]
    assert set(counts) == {2}, "one run job and one decision job per thread, nothing more"


@pytest.mark.e2e
def test_a_revision_waits_behind_a_queued_decision_and_changes_nothing(
    fleet_env: dict[str, str],
) -> None:
    """A revision is one more way in: a thread with a queued job is left to the fleet."""
    settings = settings_of(fleet_env)
    with fleet_workflow(settings) as workflow:
        spec = TaskSpec(task_id="revise-queued", objective=OBJECTIVE)
        paused = workflow.run(spec.model_copy(update={"policies": {"require_approval": True}}))
        thread = paused.thread_id
        assert paused.state == TaskState.INPUT_REQUIRED
        queued = _decide(workflow, thread, "approve")  # no worker runs: it stays queued
        before = (workflow.history(thread), workflow.state(thread)["task"])
        with pytest.raises(ThreadQueued, match=f"job {queued.job_id} ") as refused:
            workflow.revise(thread, {"max_words": 150, "reason": "shorter"})
        assert thread in refused.value.message and "nothing was revised" in refused.value.message
        assert (workflow.history(thread), workflow.state(thread)["task"]) == before
