"""P5 scale-out on the worker fleet: threads per second with 1, 2 and 4 `handoff worker`s.

The many-machines deployment on one machine: `handoff worker` processes (Procrastinate, on
the PostgreSQL that also holds checkpoints, run ledger and artifacts) run threads submitted
to the queue, as a team would run them.

- For every sample a fresh schema is created and its tables (the project's and the queue's)
  set up once; then the workers are started (``--concurrency 1`` each) and given one
  untimed warm-up thread per worker, so imports and connections are not timed.
- Timed: all N runs are queued on one connection (``Fleet.submit_runs``), and the clock
  stops when the queue reports every one of them succeeded; threads/s = N ÷ wall.
  Speed-up is threads/s ÷ that of 1 worker (medians).
- Afterwards the ledger is checked: every thread completed, each (node, input hash)
  succeeded, not reused, at most once; a second execution counts as a double execution.
- Worker kill: with 2 workers, one is SIGKILLed while it runs a job; "recovery" is the time
  from the kill until that thread has completed on the other worker (three missed
  heartbeats, ``HANDOFF_WORKER_HEARTBEAT_SECONDS=1`` here, then a resume from the last
  checkpoint), and the pass's wall is compared with the 2-worker passes without a kill.
- The worker counts are interleaved (1, 2, 4, then 4, 2, 1, ...); the schema is dropped
  after every sample.

The server is ``--postgres-url``, else ``HANDOFF_BENCH_POSTGRES_URL``, else
``HANDOFF_TEST_POSTGRES_URL``, else the local ``test`` database. When it is unreachable
the benchmark prints why and returns no rows.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from app.fleet import RUN, Fleet
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from bench._common import (
    OBJECTIVE,
    Measure,
    Row,
    iqr_text,
    print_table,
    scratch_dir,
    scratch_workflow,
)
from bench._postgres import fresh_schema, postgres_problem, postgres_url, schema_settings
from contracts import TaskSpec

WORKER_COUNTS = (1, 2, 4)
THREADS = 40
QUICK_THREADS = 8
REPEATS = 3
QUICK_REPEATS = 1
TIMEOUT = 600.0
POLL = 0.02
KILL_WORKERS = 2
"""Workers in the pass where one is SIGKILLed."""
"""Seconds between looks at the queue while waiting."""


# -- worker processes ---------------------------------------------------------------------

HANDOFF = Path(sys.executable).parent / "handoff"
HEARTBEAT = "1"


def worker_env(settings: Settings) -> dict[str, str]:
    """The environment of a `handoff worker` on the sample's schema."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    return {
        **env,
        "HANDOFF_DATABASE_URL": settings.resolved_database_url(),
        "HANDOFF_ARTIFACT_STORE": "database",
        "HANDOFF_DATA_DIR": str(settings.data_dir),
        "HANDOFF_CORPUS": json.dumps([str(BUNDLED_CORPUS)]),
        "HANDOFF_WORKER_HEARTBEAT_SECONDS": HEARTBEAT,
    }


def start_workers(settings: Settings, count: int, root: Path) -> list[subprocess.Popen[bytes]]:
    env = worker_env(settings)
    started = []
    for index in range(count):
        with (root / f"worker-{index}.log").open("wb") as log:
            started.append(
                subprocess.Popen(
                    [str(HANDOFF), "worker", "--concurrency", "1"],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    return started


def stop_workers(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def job_rows(conn: psycopg.Connection[Any]) -> list[tuple[str, str, int | None]]:
    """(thread, status, worker) of every run job."""
    rows = conn.execute(
        "SELECT lock, status::text, worker_id FROM procrastinate_jobs WHERE task_name = %s",
        (RUN,),
    ).fetchall()
    return [(str(lock), str(status), worker) for lock, status, worker in rows]


def wait_until(check: Any, what: str, processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        dead = [p.returncode for p in processes if p.poll() not in (None, 0)]
        if dead and len(dead) == len(processes):
            raise RuntimeError(f"P5: every worker died (exit codes {dead}) waiting for {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"P5: timed out waiting for {what}")
        time.sleep(POLL)


@dataclass(frozen=True)
class Sample:
    """One timed pass of the run's threads through a number of workers."""

    wall: float
    double_executions: int
    recovery: float | None = None


@functools.cache
def nodes_of_one_run() -> frozenset[str]:
    """The nodes one process runs for P5's task, start to finish, on SQLite: what every
    fleet thread must have finished (derived, so a node added to the graph counts)."""
    with scratch_workflow("p5-reference") as workflow:
        outcome = workflow.run(TaskSpec(task_id="task-p5", objective=OBJECTIVE), "reference")
        if outcome.result_status != "completed":
            raise RuntimeError(f"P5: the reference run ended {outcome.result_status}")
        return frozenset(
            run.node_id for run in workflow.history("reference") if run.status == "succeeded"
        )


def double_executions(workflow: Workflow, thread_id: str) -> tuple[int, bool]:
    """Second executions of any (node, input hash) in the thread's ledger; all nodes done."""
    runs = workflow.history(thread_id)
    done = Counter(
        (run.node_id, run.input_hash)
        for run in runs
        if run.status == "succeeded" and not run.reused
    )
    doubles = sum(count - 1 for count in done.values() if count > 1)
    complete = {node for node, _ in done} == nodes_of_one_run()
    return doubles, complete


def measure(url: str, workers: int, threads: int, root: Path, *, kill: bool = False) -> Sample:
    """Run ``threads`` threads through ``workers`` fleet workers on a fresh schema; verify."""
    with fresh_schema(url, prefix="handoff_p5") as schema_url:
        settings = schema_settings(schema_url, root)
        fleet = Fleet(settings)
        with Workflow(settings) as setup:  # tables created once, outside the timing
            setup.threads()
        fleet.ensure_schema()
        task = TaskSpec(task_id="task-p5", objective=OBJECTIVE)
        processes = start_workers(settings, workers, root)
        try:
            with psycopg.connect(schema_url, autocommit=True) as conn:
                warm = [(f"warm-{n}", task) for n in range(workers)]
                fleet.submit_runs(warm)
                wait_until(
                    lambda: (
                        [s for t, s, _ in job_rows(conn) if t.startswith("warm")]
                        == ["succeeded"] * workers
                    ),
                    "the warm-up threads",
                    processes,
                )
                thread_ids = [f"t-p5-{n:03d}" for n in range(threads)]
                began = time.perf_counter()
                fleet.submit_runs([(thread_id, task) for thread_id in thread_ids])
                recovery = None
                if kill:
                    recovery = kill_one(conn, processes)
                wait_until(
                    lambda: (
                        sum(
                            1
                            for t, s, _ in job_rows(conn)
                            if t.startswith("t-p5") and s == "succeeded"
                        )
                        == threads
                    ),
                    f"{threads} threads to succeed",
                    processes,
                )
                wall = time.perf_counter() - began
                failed = [row for row in job_rows(conn) if row[1] == "failed"]
                if failed:
                    raise RuntimeError(f"P5: jobs failed: {failed[:3]}")
        finally:
            stop_workers(processes)
        doubles = 0
        with Workflow(settings) as workflow:
            for thread_id in thread_ids:
                extra, complete = double_executions(workflow, thread_id)
                doubles += extra
                if not complete or workflow.outcome(thread_id).result_status != "completed":
                    raise RuntimeError(f"P5: thread {thread_id} did not complete every node")
        return Sample(wall, doubles, recovery)


def lock_holder(
    conn: psycopg.Connection[Any], processes: list[subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes] | None:
    """A worker process holding a thread lock (its sessions are named ``handoff-<pid>``)."""
    rows = conn.execute(
        "SELECT DISTINCT a.application_name FROM pg_locks l JOIN pg_stat_activity a "
        "USING (pid) WHERE l.locktype = 'advisory' AND l.granted"
    ).fetchall()
    by_pid = {process.pid: process for process in processes}
    for (name,) in rows:
        pid = str(name).removeprefix("handoff-")
        if pid.isdigit() and int(pid) in by_pid:
            return by_pid[int(pid)]
    return None


def kill_one(conn: psycopg.Connection[Any], processes: list[subprocess.Popen[bytes]]) -> float:
    """SIGKILL a worker inside a thread; seconds until every thread in flight completed."""
    victim: subprocess.Popen[bytes] | None = None

    def found() -> bool:
        nonlocal victim
        victim = lock_holder(conn, processes)
        return victim is not None

    wait_until(found, "a worker inside a thread", processes)
    assert victim is not None
    in_flight = {t for t, s, _ in job_rows(conn) if s == "doing"}
    killed_at = time.perf_counter()
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    wait_until(
        lambda: in_flight <= {t for t, s, _ in job_rows(conn) if s == "succeeded"},
        "the threads in flight at the kill to complete",
        [process for process in processes if process is not victim],
    )
    return time.perf_counter() - killed_at


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """``--quick``, ``--repeats`` (like every benchmark), plus P5's own options."""
    parser = argparse.ArgumentParser(description="P5 PostgreSQL scale-out")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_THREADS} threads, 1 pass")
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"timed passes per worker count (default {REPEATS}, {QUICK_REPEATS} with --quick)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help=f"threads per pass (default {THREADS}, {QUICK_THREADS} with --quick)",
    )
    parser.add_argument("--postgres-url", default=None, help="server (default: see module doc)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.repeats is None:
        args.repeats = QUICK_REPEATS if args.quick else REPEATS
    if args.threads is None:
        args.threads = QUICK_THREADS if args.quick else THREADS
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Measure and print P5; returns the rows (none when PostgreSQL is unreachable)."""
    args = parse(argv)
    url = postgres_url(args.postgres_url)
    problem = postgres_problem(url)
    if problem is not None:
        print(f"\nP5 PostgreSQL scale-out: SKIPPED, PostgreSQL at {url} is unreachable: {problem}")
        return []
    samples: dict[int, list[Sample]] = {workers: [] for workers in WORKER_COUNTS}
    killed: list[Sample] = []
    load_before = os.getloadavg()
    with scratch_dir("p5") as root:
        for repeat in range(args.repeats):
            order = WORKER_COUNTS if repeat % 2 == 0 else WORKER_COUNTS[::-1]
            for workers in order:
                samples[workers].append(measure(url, workers, args.threads, root))
            killed.append(measure(url, KILL_WORKERS, args.threads, root, kill=True))
    load_after = os.getloadavg()

    walls = {workers: Measure.of([s.wall for s in runs]) for workers, runs in samples.items()}
    rates = {
        workers: Measure.of([args.threads / s.wall for s in runs])
        for workers, runs in samples.items()
    }
    doubles = {w: sum(s.double_executions for s in runs) for w, runs in samples.items()}
    base = rates[WORKER_COUNTS[0]].median
    kill_wall = Measure.of([s.wall for s in killed])
    recovery = Measure.of([s.recovery or 0.0 for s in killed])
    kill_doubles = sum(s.double_executions for s in killed)

    def table_row(label: str, wall: Measure, rate: float, double: int) -> list[str]:
        cells = [label, f"{wall.median:.2f}", iqr_text(wall, lambda value: f"{value:.2f}")]
        return [*cells, f"{rate:.2f}", f"{rate / base:.2f}x", str(double)]

    table = [
        table_row(str(workers), walls[workers], rates[workers].median, doubles[workers])
        for workers in WORKER_COUNTS
    ]
    table.append(
        table_row(
            f"{KILL_WORKERS}, one killed",
            kill_wall,
            args.threads / kill_wall.median,
            kill_doubles,
        )
    )
    print_table(
        f"P5 worker fleet (handoff worker, Procrastinate): {args.threads} threads per pass, "
        f"{args.repeats} pass(es) per row, medians",
        ["workers", "wall s", "wall IQR", "threads/s", "speed-up", "double executions"],
        table,
    )
    print(
        f"worker kill: recovery (kill → every thread in flight completed) median "
        f"{recovery.median:.2f} s, range {recovery.low:.2f}-{recovery.high:.2f} s, heartbeat "
        f"{HEARTBEAT} s; the pass took {kill_wall.median - walls[KILL_WORKERS].median:+.2f} s "
        f"against {KILL_WORKERS} workers without a kill"
    )
    print(
        f"{os.cpu_count()} logical cores; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after; every thread completed, ledger checked"
    )
    rows = []
    one = f"{WORKER_COUNTS[0]} worker"
    clean = all(count == 0 for count in doubles.values()) and kill_doubles == 0
    for workers in WORKER_COUNTS[1:]:
        rows.append(
            Row(
                bench="P5",
                case=f"{workers} workers vs 1, threads/s",
                unit="threads/s",
                baseline_name=one,
                baseline=rates[WORKER_COUNTS[0]],
                candidate_name=f"{workers} workers",
                candidate=rates[workers],
                target="0 double executions",
                passed=clean,
            )
        )
    rows.append(
        Row(
            bench="P5",
            case=f"{KILL_WORKERS} workers, one SIGKILLed, wall s",
            unit="s",
            baseline_name=f"{KILL_WORKERS} workers",
            baseline=walls[KILL_WORKERS],
            candidate_name="one killed",
            candidate=kill_wall,
            target="0 double executions",
            passed=clean,
        )
    )
    return rows


if __name__ == "__main__":
    main()
