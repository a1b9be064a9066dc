"""P5 PostgreSQL scale-out: threads per second with 1, 2 and 4 worker processes.

The many-machines deployment on one machine: stateless worker processes share one
PostgreSQL database (checkpoints, run ledger and artifacts all in it) and pull thread ids
from one shared queue, with the single-writer guarantee on (``Workflow.run`` holds the
thread's advisory lock).

- For every sample a fresh schema is created, its tables set up once by the parent, and
  the workers spawned (``multiprocessing`` spawn: own interpreter, own connections).
  Each worker opens ``Workflow`` on the schema (``artifact_store="database"``) and does
  one untimed warm-up run on a thread of its own, then waits for the start signal.
- Every one of the N thread ids is queued twice (delivered at least once), so a worker
  regularly meets a thread another worker holds or has finished: ``ThreadBusy`` and
  ``ThreadExists`` count as "someone else has it".
- Wall time runs from the start signal to the last of the 2N queue items answered;
  threads/s = N ÷ wall. Speed-up is threads/s ÷ that of 1 worker (medians).
- Afterwards the ledger is checked: every thread completed exactly once, with each
  (node, input hash) succeeded, not reused, at most once; a second execution counts as a
  double execution. Any error, double execution or missing thread fails the run.
- The worker counts are interleaved (1, 2, 4, then 4, 2, 1, ...); the schema is dropped
  after every sample.

The server is ``--postgres-url``, else ``HANDOFF_BENCH_POSTGRES_URL``, else
``HANDOFF_TEST_POSTGRES_URL``, else the local ``test`` database. When it is unreachable
the benchmark prints why and returns no rows.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg

from app.errors import ThreadBusy, ThreadExists
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from bench._common import OBJECTIVE, Measure, Row, print_table, scratch_dir

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
WORKER_COUNTS = (1, 2, 4)
THREADS = 40
QUICK_THREADS = 8
REPEATS = 3
QUICK_REPEATS = 1
NODES = {"research", "writer", "reviewer", "finalize"}
TIMEOUT = 600.0
SPAWN = multiprocessing.get_context("spawn")


def postgres_url(explicit: str | None = None) -> str:
    """The server P5 uses."""
    return (
        explicit
        or os.environ.get("HANDOFF_BENCH_POSTGRES_URL")
        or os.environ.get("HANDOFF_TEST_POSTGRES_URL")
        or DEFAULT_POSTGRES_URL
    )


def postgres_problem(url: str) -> str | None:
    """Why the server cannot be used, or None when it can."""
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as error:  # any failure to reach it is reported, not raised
        return " ".join(str(error).split()) or type(error).__name__
    return None


def with_search_path(url: str, schema: str) -> str:
    """``url`` whose sessions resolve unqualified names in ``schema``."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"


@contextmanager
def fresh_schema(url: str, prefix: str = "handoff_p5") -> Iterator[str]:
    """A new schema on the server; yields a URL that uses it, then drops it."""
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_search_path(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SET lock_timeout = '20s'")
            # A worker killed on an error must not block the drop with its session.
            conn.execute(
                "SELECT pg_terminate_backend(l.pid) FROM pg_locks l "
                "JOIN pg_class c ON c.oid = l.relation "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND l.pid <> pg_backend_pid()",
                (schema,),
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def schema_settings(url: str, root: Path) -> Settings:
    """Settings for a Workflow whose checkpoints, ledger and artifacts live in one schema."""
    return Settings(
        data_dir=root,
        database_url=url,
        artifact_store="database",
        corpus=[BUNDLED_CORPUS],
    )


# -- worker processes ---------------------------------------------------------------------


def _worker(
    settings: Settings, index: int, jobs: Any, results: Any, ready: Any, start: Any
) -> None:
    """Warm up, wait for the start signal, then run thread ids from the queue until None."""
    with Workflow(settings) as workflow:
        try:
            warm = f"warm-{index}"
            workflow.run(workflow.task(OBJECTIVE, task_id=f"task-{warm}"), warm)
        except Exception as error:  # reported to the parent, which fails on it
            results.put((f"warm-{index}", os.getpid(), f"error:{type(error).__name__}:{error}"))
        ready.put(index)
        if not start.wait(TIMEOUT):
            return
        cpu = time.process_time()
        while (thread_id := jobs.get()) is not None:
            task = workflow.task(OBJECTIVE, task_id=f"task-{thread_id}")
            try:
                outcome = workflow.run(task, thread_id)
                kind = f"completed:{outcome.result_status}"
            except ThreadBusy:
                kind = "busy"
            except ThreadExists:
                kind = "exists"
            except Exception as error:  # reported to the parent, which fails on it
                kind = f"error:{type(error).__name__}:{error}"
            results.put((thread_id, os.getpid(), kind))
        results.put(("", os.getpid(), f"cpu:{time.process_time() - cpu}"))


@dataclass(frozen=True)
class Sample:
    """One timed pass: N threads through ``workers`` processes."""

    workers: int
    wall: float
    busy: int
    exists: int
    double_executions: int
    worker_cpu: float
    completed: int
    threads: int

    @property
    def rate(self) -> float:
        """Threads per second."""
        return self.threads / self.wall


def _collect(results: Any, count: int, processes: list[Any]) -> list[tuple[str, int, str]]:
    """Results until ``count`` queue items are answered (workers' CPU reports not counted)."""
    collected: list[tuple[str, int, str]] = []
    answered = 0
    deadline = time.monotonic() + TIMEOUT
    while answered < count:
        try:
            item = results.get(timeout=1)
            collected.append(item)
            answered += not item[2].startswith("cpu:")
        except queue.Empty:
            dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"a P5 worker died with exit code {dead}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"P5: only {len(collected)} of {count} results") from None
    return collected


def double_executions(workflow: Workflow, thread_id: str) -> tuple[int, bool]:
    """Second executions of any (node, input hash) in the thread's ledger; all nodes done."""
    runs = workflow.history(thread_id)
    done = Counter(
        (run.node_id, run.input_hash)
        for run in runs
        if run.status == "succeeded" and not run.reused
    )
    doubles = sum(count - 1 for count in done.values() if count > 1)
    complete = {node for node, _ in done} == NODES and not [
        run for run in runs if run.status == "running"
    ]
    return doubles, complete


def measure(url: str, workers: int, threads: int, root: Path) -> Sample:
    """Run ``threads`` threads through ``workers`` processes on a fresh schema; verify."""
    with fresh_schema(url) as schema_url:
        settings = schema_settings(schema_url, root)
        with Workflow(settings) as setup:  # tables created once, outside the timing
            setup.threads()
        thread_ids = [f"t-p5-{n:03d}" for n in range(threads)]
        jobs, results, ready, start = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Queue(), SPAWN.Event()
        for thread_id in thread_ids:  # delivered at least once: every id is queued twice
            jobs.put(thread_id)
            jobs.put(thread_id)
        for _ in range(workers):
            jobs.put(None)
        processes = [
            SPAWN.Process(
                target=_worker, args=(settings, index, jobs, results, ready, start), daemon=True
            )
            for index in range(workers)
        ]
        for process in processes:
            process.start()
        try:
            for _ in range(workers):
                ready.get(timeout=TIMEOUT)
            began = time.perf_counter()
            start.set()
            outcomes = _collect(results, 2 * threads, processes)
            wall = time.perf_counter() - began
        finally:
            start.set()
            for process in processes:
                process.join(timeout=60)
                if process.is_alive():
                    process.kill()
        leftover: list[tuple[str, int, str]] = []
        while True:
            try:
                leftover.append(results.get_nowait())
            except queue.Empty:
                break
        everything = outcomes + leftover
        cpu = sum(float(kind[4:]) for _, _, kind in everything if kind.startswith("cpu:"))
        outcomes = [item for item in everything if not item[2].startswith("cpu:")]
        errors = [item for item in outcomes if item[2].startswith("error")]
        if errors:
            raise RuntimeError(f"P5 with {workers} workers: {errors[:3]}")
        completed = Counter(thread for thread, _, kind in outcomes if kind.startswith("completed"))
        statuses = [kind for _, _, kind in outcomes if kind.startswith("completed:")]
        if set(statuses) != {"completed:completed"}:
            raise RuntimeError(f"P5: a thread ended other than completed: {set(statuses)}")
        warm_ids = [f"warm-{index}" for index in range(workers)]
        doubles = 0
        with Workflow(settings) as workflow:
            stored = workflow.threads()
            if stored != sorted(thread_ids + warm_ids):
                raise RuntimeError(f"P5: unexpected threads in the store: {stored}")
            for thread_id in stored:
                extra, complete = double_executions(workflow, thread_id)
                doubles += extra
                if not complete:
                    raise RuntimeError(f"P5: thread {thread_id} did not complete every node")
                if workflow.outcome(thread_id).result_status != "completed":
                    raise RuntimeError(f"P5: thread {thread_id} did not complete")
        # A thread run twice to completion would show in the ledger and in the results.
        doubles += sum(count - 1 for count in completed.values() if count > 1)
        if sorted(completed) != thread_ids:
            raise RuntimeError(f"P5: threads never completed: {set(thread_ids) - set(completed)}")
        return Sample(
            workers=workers,
            wall=wall,
            busy=sum(1 for _, _, kind in outcomes if kind == "busy"),
            exists=sum(1 for _, _, kind in outcomes if kind == "exists"),
            double_executions=doubles,
            worker_cpu=cpu,
            completed=len(completed),
            threads=threads,
        )


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
    load_before = os.getloadavg()
    with scratch_dir("p5") as root:
        for repeat in range(args.repeats):
            order = WORKER_COUNTS if repeat % 2 == 0 else WORKER_COUNTS[::-1]
            for workers in order:
                samples[workers].append(measure(url, workers, args.threads, root))
    load_after = os.getloadavg()

    walls = {workers: Measure.of([s.wall for s in runs]) for workers, runs in samples.items()}
    rates = {workers: Measure.of([s.rate for s in runs]) for workers, runs in samples.items()}
    doubles = {w: sum(s.double_executions for s in runs) for w, runs in samples.items()}
    load = {w: Measure.of([s.worker_cpu / s.wall for s in runs]) for w, runs in samples.items()}
    busy = {w: sum(s.busy for s in runs) for w, runs in samples.items()}
    exists = {w: sum(s.exists for s in runs) for w, runs in samples.items()}
    base = rates[WORKER_COUNTS[0]].median
    table = []
    for workers in WORKER_COUNTS:
        wall = walls[workers]
        spread = f"{wall.q1:.2f}-{wall.q3:.2f} ({wall.spread:.0%})" if wall.n > 1 else "-"
        table.append(
            [
                str(workers),
                f"{wall.median:.2f}",
                spread,
                f"{rates[workers].median:.2f}",
                f"{rates[workers].median / base:.2f}x",
                f"{load[workers].median:.2f}",
                f"{busy[workers]} busy, {exists[workers]} exists",
                str(doubles[workers]),
            ]
        )
    print_table(
        f"P5 PostgreSQL scale-out: {args.threads} threads (each queued twice) per pass, "
        f"{args.repeats} pass(es) per worker count, medians",
        [
            "workers",
            "wall s",
            "wall IQR",
            "threads/s",
            "speed-up",
            "worker CPU s/s",
            "refused (all passes)",
            "double executions",
        ],
        table,
    )
    cores = os.cpu_count()
    print(
        f"{cores} logical cores; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after; every thread completed once, ledger checked"
    )
    rows = []
    one = f"{WORKER_COUNTS[0]} worker"
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
                passed=doubles[workers] == 0 and doubles[WORKER_COUNTS[0]] == 0,
            )
        )
    return rows


if __name__ == "__main__":
    main()
