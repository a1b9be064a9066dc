"""One writer per thread, across real processes, on SQLite and PostgreSQL.

Races are run by worker processes (spawned, so each has its own connections and locks)
that start each attempt at a shared barrier. Afterwards every thread is checked for the
three ways a second writer would show: a forked checkpoint chain, a node that did its work
twice, and an artifact revision written twice.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.errors import (
    CheckpointNotLatest,
    DatabaseUnavailable,
    ThreadBusy,
    ThreadExists,
    ThreadFinished,
)
from app.exit_codes import ExitCode
from app.faults.points import with_faults
from app.settings import Settings
from app.storage.postgres import advisory_key
from app.workflow import Workflow
from tests import forked
from tests.backends import backend_env, backend_settings
from tests.conftest import OBJECTIVE

WORKERS = 4
RACES = 20
THREADS = 100
PATH = ("research", "join_research", "writer", "reviewer", "finalize")
"""Nodes a completed run passes through; an adapted wiring may add others between them."""
SPAWN = multiprocessing.get_context("spawn")


class Crash(Exception):
    """Stands in for a process that stopped between two nodes."""


def crash_at(point: str) -> Callable[[str], None]:
    def fault(reached: str) -> None:
        if reached == point:
            raise Crash(reached)

    return fault


@contextmanager
def interrupting(settings: Settings) -> Iterator[Callable[[str], None]]:
    """Starts threads whose research is saved and whose writer never started."""
    with Workflow(settings) as outer:
        context = with_faults(outer.context, crash_at("writer:start"))
        with Workflow(settings, context=context) as workflow:

            def start(thread_id: str) -> None:
                with pytest.raises(Crash):
                    workflow.run(workflow.task(OBJECTIVE, task_id=f"task-{thread_id}"), thread_id)
                assert workflow_next(outer, thread_id) == ("writer",)

            yield start


def interrupted_thread(settings: Settings, thread_id: str) -> None:
    """One thread whose research is saved and whose writer never started."""
    with interrupting(settings) as start:
        start(thread_id)


def workflow_next(workflow: Workflow, thread_id: str) -> tuple[str, ...]:
    return tuple(workflow.graph.get_state(workflow.config(thread_id)).next)


# -- worker processes ---------------------------------------------------------------------


def _wait_for_losers(busy: Any, losers: int) -> Callable[[str], None]:
    """The winner holds the thread until every other racer has been turned away (or 20 s).

    If the lock let two racers in, neither would see enough refusals: both would proceed
    after the timeout, and the test would see two winners and a forked chain.
    """

    def fault(point: str) -> None:
        if point == "writer:attempt":
            deadline = time.monotonic() + 20
            while busy.value < losers and time.monotonic() < deadline:
                time.sleep(0.005)

    return fault


def _race_worker(
    settings: Settings, jobs: Any, results: Any, barrier: Any, busy: Any, losers: int
) -> None:
    with Workflow(settings) as outer:
        context = with_faults(outer.context, _wait_for_losers(busy, losers))
        with Workflow(settings, context=context) as workflow:
            while (thread_id := jobs.get()) is not None:
                barrier.wait(timeout=60)
                try:
                    outcome = workflow.resume(thread_id)
                    results.put((thread_id, os.getpid(), f"proceeded:{outcome.result_status}"))
                except ThreadBusy:
                    with busy.get_lock():
                        busy.value += 1
                    results.put((thread_id, os.getpid(), "busy"))
                except ThreadFinished:
                    results.put((thread_id, os.getpid(), "finished"))
                except Exception as error:  # reported to the test, which fails on it
                    results.put((thread_id, os.getpid(), f"error:{type(error).__name__}:{error}"))


def _queue_worker(settings: Settings, jobs: Any, results: Any) -> None:
    with Workflow(settings) as workflow:
        while (thread_id := jobs.get()) is not None:
            task = workflow.task(OBJECTIVE, task_id=f"task-{thread_id}")
            try:
                outcome = workflow.run(task, thread_id)
                results.put((thread_id, os.getpid(), f"completed:{outcome.result_status}"))
            except ThreadBusy:
                results.put((thread_id, os.getpid(), "busy"))
            except ThreadExists:
                results.put((thread_id, os.getpid(), "exists"))
            except Exception as error:  # reported to the test, which fails on it
                results.put((thread_id, os.getpid(), f"error:{type(error).__name__}:{error}"))


def _collect(results: Any, count: int, processes: list[Any]) -> list[tuple[str, int, str]]:
    collected: list[tuple[str, int, str]] = []
    deadline = time.monotonic() + 300
    while len(collected) < count:
        try:
            collected.append(results.get(timeout=1))
        except queue.Empty:
            dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            assert not dead, f"a worker died with exit code {dead}"
            assert time.monotonic() < deadline, f"only {len(collected)} of {count} results"
    return collected


def _stop(jobs: list[Any], processes: list[Any]) -> None:
    for job in jobs:
        job.put(None)
    for process in processes:
        process.join(timeout=60)
        if process.is_alive():
            process.kill()


# -- what a second writer would leave behind ---------------------------------------------


def assert_linear_chain(workflow: Workflow, thread_id: str) -> None:
    """Every checkpoint of the thread has at most one child: the chain never forked."""
    tuples = list(workflow.saver.list(workflow.config(thread_id)))
    assert tuples, f"{thread_id} has no checkpoints"
    parents: dict[str, str | None] = {}
    for item in tuples:
        assert item.config["configurable"].get("checkpoint_ns", "") == ""
        parent = item.parent_config["configurable"]["checkpoint_id"] if item.parent_config else None
        parents[item.config["configurable"]["checkpoint_id"]] = parent
    roots = [child for child, parent in parents.items() if parent is None]
    assert len(roots) == 1, f"{thread_id}: {len(roots)} roots"
    children = Counter(parent for parent in parents.values() if parent is not None)
    assert all(parent in parents for parent in children), f"{thread_id}: dangling parent"
    forks = {parent: n for parent, n in children.items() if n > 1}
    assert not forks, f"{thread_id}: the checkpoint chain forked at {forks}"


def assert_no_duplicate_revisions(workflow: Workflow, thread_id: str) -> None:
    store = workflow.context.store
    for artifact_id in store.ids():
        if artifact_id.startswith(f"{thread_id}-"):
            shas = [ref.sha256 for ref in store.history(artifact_id)]
            assert len(shas) == len(set(shas)), f"{artifact_id}: duplicate revisions {shas}"


def assert_single_writer_history(
    workflow: Workflow, thread_id: str, *, only_work: bool = False
) -> None:
    """One linear checkpoint chain, each node's work done once, no revision written twice.

    ``only_work``: every audit record is work done once (a process that lost a race
    recorded nothing); a thread that met a failure keeps its failed or reused records.
    """
    assert_linear_chain(workflow, thread_id)
    assert_no_duplicate_revisions(workflow, thread_id)

    runs = workflow.history(thread_id)
    done = Counter(
        (run.node_id, run.input_hash)
        for run in runs
        if run.status == "succeeded" and not run.reused
    )
    assert {node for node, _ in done} >= set(PATH), f"{thread_id}: {done}"
    assert max(done.values()) == 1, f"{thread_id}: a node did its work twice: {done}"
    if only_work:
        assert len(runs) == len(done), f"{thread_id}: records besides the work: {runs}"
    assert not [run for run in runs if run.status == "running"]


# -- tests ----------------------------------------------------------------------------------


@pytest.fixture
def racers(backend: Settings) -> Iterator[tuple[list[Any], Any, list[Any], Any]]:
    jobs = [SPAWN.Queue() for _ in range(WORKERS)]
    results = SPAWN.Queue()
    barrier = SPAWN.Barrier(WORKERS)
    busy = SPAWN.Value("i", 0)
    processes = [
        SPAWN.Process(
            target=_race_worker,
            args=(backend, job, results, barrier, busy, WORKERS - 1),
            daemon=True,
        )
        for job in jobs
    ]
    for process in processes:
        process.start()
    try:
        yield jobs, results, processes, busy
    finally:
        _stop(jobs, processes)


@pytest.mark.slow
def test_racing_resumes_exactly_one_proceeds_every_time_and_nothing_forks(
    backend: Settings, racers: tuple[list[Any], Any, list[Any], Any]
) -> None:
    jobs, results, processes, busy = racers
    winners: Counter[int] = Counter()
    with interrupting(backend) as start:
        for race in range(RACES):
            start(f"t-race-{race}")
    for race in range(RACES):
        thread_id = f"t-race-{race}"
        with busy.get_lock():
            busy.value = 0
        for job in jobs:
            job.put(thread_id)
        outcomes = _collect(results, WORKERS, processes)
        kinds = sorted(kind for _, _, kind in outcomes)
        assert kinds == ["busy"] * (WORKERS - 1) + ["proceeded:completed"], (race, outcomes)
        winners.update(pid for _, pid, kind in outcomes if kind.startswith("proceeded"))

    with Workflow(backend) as workflow:
        for race in range(RACES):
            thread_id = f"t-race-{race}"
            assert workflow.outcome(thread_id).result_status == "completed"
            assert_single_writer_history(workflow, thread_id, only_work=True)
    assert len(winners) > 1, f"the races were not real: one process always won ({winners})"


@pytest.mark.postgres
def test_four_workers_complete_a_hundred_threads_from_a_shared_queue_each_exactly_once(
    tmp_path: Path,
) -> None:
    """The many-machines deployment: stateless workers sharing one PostgreSQL database.
    (SQLite's lock is the same code path as in the races above, on one machine.)"""
    with backend_settings("postgres", tmp_path / "data") as settings:
        _complete_from_a_shared_queue(settings)


def _complete_from_a_shared_queue(backend: Settings) -> None:
    jobs = SPAWN.Queue()
    results = SPAWN.Queue()
    thread_ids = [f"t-q-{n:03d}" for n in range(THREADS)]
    for thread_id in thread_ids:  # delivered at least once: every id is queued twice
        jobs.put(thread_id)
        jobs.put(thread_id)
    processes = [
        SPAWN.Process(target=_queue_worker, args=(backend, jobs, results), daemon=True)
        for _ in range(WORKERS)
    ]
    for process in processes:
        process.start()
    try:
        outcomes = _collect(results, 2 * THREADS, processes)
    finally:
        _stop([jobs] * WORKERS, processes)

    errors = [outcome for outcome in outcomes if outcome[2].startswith("error")]
    assert not errors, errors[:3]
    completed = Counter(thread for thread, _, kind in outcomes if kind == "completed:completed")
    assert sorted(completed) == thread_ids and set(completed.values()) == {1}
    refused = Counter(kind for _, _, kind in outcomes if not kind.startswith("completed"))
    assert sum(refused.values()) == THREADS, refused
    assert len({pid for _, pid, _ in outcomes if pid}) == WORKERS, "every worker took part"

    with Workflow(backend) as workflow:
        assert workflow.threads() == thread_ids
        for thread_id in thread_ids:
            assert_single_writer_history(workflow, thread_id, only_work=True)


@pytest.mark.e2e
def test_a_busy_thread_is_refused_exit_7_from_the_cli_and_changes_nothing(
    backend: Settings,
) -> None:
    interrupted_thread(backend, "t-held")
    with Workflow(backend) as workflow:
        before = (workflow.checkpoint_count("t-held"), workflow.history("t-held"))
        with workflow.backend.lock.hold("t-held"):
            resumed = forked.run(["resume", "t-held"], env=backend_env(backend))
            with Workflow(backend) as other, pytest.raises(ThreadBusy, match="'t-held' is busy"):
                other.run(OBJECTIVE, "t-held")
        assert resumed.returncode == ExitCode.THREAD_BUSY, resumed.stderr
        assert "thread 't-held' is busy" in resumed.stderr
        assert "nothing was changed" in resumed.stderr
        assert len(resumed.stderr.strip().splitlines()) == 1, resumed.stderr
        assert (workflow.checkpoint_count("t-held"), workflow.history("t-held")) == before
        assert workflow.resume("t-held").result_status == "completed"


def _hold_then_sleep(settings: Settings, thread_id: str, ready: Any) -> None:
    with Workflow(settings) as workflow, workflow.backend.lock.hold(thread_id):
        ready.set()
        time.sleep(120)


@pytest.mark.slow
def test_a_sigkilled_holder_releases_the_thread_at_once(backend: Settings) -> None:
    interrupted_thread(backend, "t-orphan")
    ready = SPAWN.Event()
    holder = SPAWN.Process(target=_hold_then_sleep, args=(backend, "t-orphan", ready))
    holder.start()
    try:
        assert ready.wait(60), "the holder never took the lock"
        with Workflow(backend) as workflow:
            with pytest.raises(ThreadBusy, match="busy"):
                workflow.resume("t-orphan")
            assert holder.pid is not None
            os.kill(holder.pid, signal.SIGKILL)
            holder.join(30)
            deadline = time.monotonic() + 10  # the server may take a moment to end a session
            while True:
                try:
                    outcome = workflow.resume("t-orphan")
                    break
                except ThreadBusy:
                    assert time.monotonic() < deadline, "a dead holder still blocks the thread"
                    time.sleep(0.05)
            assert outcome.result_status == "completed"
            assert_single_writer_history(workflow, "t-orphan")
    finally:
        if holder.is_alive():
            holder.kill()


def _end_the_lock_session(url: str, thread_id: str) -> None:
    """What a network partition does to the holder: its session, and lock, are gone."""
    with psycopg.connect(url, autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()
        assert schema is not None
        key = advisory_key("handoff-thread", str(schema[0]), thread_id) & 0xFFFFFFFFFFFFFFFF
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND classid = %s::bigint::oid AND objid = %s::bigint::oid AND objsubid = 1",
            (key >> 32, key & 0xFFFFFFFF),
        ).fetchall()
        assert ended == [(True,)], ended


@pytest.mark.postgres
def test_a_holder_that_lost_its_session_cannot_write_after_another_took_over(
    tmp_path: Path,
) -> None:
    """The fork LangGraph allows (langgraph#8796), provoked on purpose: worker A loses its
    session mid-node, worker B takes the thread over and finishes it, then A carries on.
    A's checkpoint writes go through the lost session, so they fail instead of forking."""
    with backend_settings("postgres", tmp_path / "data") as settings:
        with interrupting(settings) as start:
            start("t-zombie")
        taken_over: list[str] = []

        def take_over(point: str) -> None:
            if point != "writer:attempt" or taken_over:
                return
            _end_the_lock_session(settings.resolved_database_url(), "t-zombie")

            def worker_b() -> None:  # a thread of its own: no LangGraph context leaks in
                with Workflow(settings) as other:
                    taken_over.append(other.resume("t-zombie").result_status)

            thread = threading.Thread(target=worker_b)
            thread.start()
            thread.join(120)

        with Workflow(settings) as workflow:
            context = with_faults(workflow.context, take_over)
            with Workflow(settings, context=context) as zombie:
                # refused as a fork by the saver (the thread moved on), or by the lost session
                with pytest.raises((CheckpointNotLatest, DatabaseUnavailable), match="'t-zombie'"):
                    zombie.resume("t-zombie")
            assert taken_over == ["completed"]
            assert_linear_chain(workflow, "t-zombie")
            assert_no_duplicate_revisions(workflow, "t-zombie")
            assert workflow.outcome("t-zombie").result_status == "completed"
            assert workflow.status("t-zombie").next_nodes == ()
