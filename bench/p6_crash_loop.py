"""P6 crash loop: the real CLI SIGKILLed at random moments, resumed until it finishes.

The kill matrix (tests/app/test_durability.py) kills at each named fault point once. This
kills wherever the clock happens to be: in the interpreter's start-up, in a database
migration, between two statements of a checkpoint write, half way through an artifact's
fsync. Each trial is independent and ends with the same checks as the kill matrix.

- **Reference**: first, per backend, ``REFERENCE_RUNS`` uninterrupted ``handoff run``s on
  fresh stores (as many at once as the trials will run), each timed in the CPU seconds its
  process used from start to exit. Their articles must be identical; their median is the
  *span* the kill moments are drawn from, and the nodes their ledger shows succeeded are
  the nodes every trial must show.
- **Trial**: a fresh SQLite file and artifact folder, or a fresh PostgreSQL schema (with the
  artifacts in it). ``handoff run OBJECTIVE --question Q2 --question Q3 --thread
  t-crash-loop`` (``TASK``: research runs three parallel branches) on the bundled corpus
  with the default policies (no human decision needed) is started and SIGKILLed once it has
  used a CPU time drawn uniformly from [0, span) (see ``launch`` for why CPU time). Then
  ``handoff resume t-crash-loop`` (or ``handoff run`` again, when the kill came before the
  thread existed) is started and killed the same way, and so on until a process ends on its
  own or the trial has had ``MAX_KILLS`` kills, after which the last resume runs
  uninterrupted. A process that exits ``THREAD_BUSY`` (a killed process's PostgreSQL
  session not yet ended) is started again after a short pause.
- **Checks** (after the last process): *completed* means the last process exited 0 (or 6,
  already finished, when the final checkpoint was written before the kill), the outcome is
  ``completed``, every reference node succeeded and no attempt is left ``running``;
  *mismatch*, the article is not byte-identical to the reference's; *duplicate node runs*,
  second executions of a (node, input hash) in the ledger (succeeded and not reused); and
  *duplicate revisions*, revisions of an artifact whose content equals an earlier revision's.
- A kill counts *mid-run* when the killed process had changed the thread's checkpoints,
  ledger or artifacts; the other kills landed in start-up (imports, opening the database).

The RNG is seeded: trial ``n`` draws its kill moments, as fractions of the span, from
``Random(f"{seed}:{n}")``, so a failing trial is rerun with the same seed (``--seed``) and
its moments recur as the same fractions of the span (the span itself is measured afresh).
Trials run ``--jobs`` at a time (default 2): each has its own store, so they cannot meet.

The PostgreSQL server is P5's (``--postgres-url``, else ``HANDOFF_BENCH_POSTGRES_URL``, else
``HANDOFF_TEST_POSTGRES_URL``, else the local ``test`` database); when it is unreachable that
backend is skipped with the reason printed.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from app.exit_codes import ExitCode
from app.settings import Settings
from app.storage.artifacts.base import ArtifactStoreBase
from app.workflow import Workflow
from bench._common import (
    OBJECTIVE,
    QUESTIONS,
    Measure,
    Row,
    print_table,
    scratch_dir,
    workflow_settings,
)
from bench._postgres import fresh_schema, postgres_problem, postgres_url, schema_settings

BACKENDS = ("sqlite", "postgres")
TRIALS = 30
QUICK_TRIALS = 3
MAX_KILLS = 4
"""Kills per trial at most; the resume after the last one runs to its end."""
JOBS = 2
REFERENCE_RUNS = 4
DEFAULT_SEED = 6
THREAD = "t-crash-loop"
PROCESS_TIMEOUT = 300.0
"""Seconds an unkilled CLI process may take before the trial fails as hung."""
BUSY_PAUSE = 0.2
BUSY_RETRIES = 50
HANDOFF = Path(sys.executable).parent / "handoff"
POLL = 0.005
"""Seconds between two looks at a running process's CPU time (the kernel counts in 10 ms)."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

TASK = [OBJECTIVE, *(arg for question in QUESTIONS for arg in ("--question", question))]
"""The objective and two sub-questions: research runs three branches side by side, so
kills land inside parallel branches too."""


@dataclass(frozen=True)
class Reference:
    """What an uninterrupted run produced and the CPU seconds it took."""

    article: bytes
    nodes: frozenset[str]
    span: float


@dataclass
class Trial:
    """One trial's kills and the verdict of its checks."""

    index: int
    steps: list[str] = field(default_factory=list)
    kills: int = 0
    kills_mid_run: int = 0
    busy: int = 0
    completed: bool = False
    mismatch: bool = False
    duplicate_runs: int = 0
    duplicate_revisions: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Completed, identical article, nothing done or stored twice."""
        return (
            self.completed
            and not self.mismatch
            and not self.duplicate_runs
            and not self.duplicate_revisions
        )


COUNTED = (
    "completed",
    "mismatch",
    "duplicate_runs",
    "duplicate_revisions",
    "kills",
    "kills_mid_run",
    "busy",
)
"""What the table reports of each backend's trials, in its column order."""


@dataclass(frozen=True)
class Summary:
    """Every trial of one backend."""

    backend: str
    seed: int
    reference: Reference
    trials: list[Trial]
    wall: float

    def totals(self) -> dict[str, int]:
        """Each of COUNTED summed over the trials (a flag counts the trials it is set in)."""
        return {name: sum(int(getattr(trial, name)) for trial in self.trials) for name in COUNTED}

    @property
    def failures(self) -> list[Trial]:
        """Trials that are not clean."""
        return [trial for trial in self.trials if not trial.clean]

    @property
    def ok(self) -> bool:
        """Every trial completed, identical, without duplicates."""
        return bool(self.trials) and not self.failures


# -- one CLI process ----------------------------------------------------------------------


@contextmanager
def fresh_store(backend: str, root: Path, name: str, server: str | None) -> Iterator[Settings]:
    """Settings for a store nobody has used: an SQLite file, or a new PostgreSQL schema."""
    if backend == "sqlite":
        yield workflow_settings(root, name).with_overrides(model="offline", fault=None)
    elif backend == "postgres":
        if server is None:
            raise ValueError("the postgres backend needs a server URL")
        with fresh_schema(server, prefix="handoff_p6") as url:
            yield schema_settings(url, root / name).with_overrides(model="offline", fault=None)
    else:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")


def cli_env(settings: Settings) -> dict[str, str]:
    """The environment of a ``handoff`` process on these settings' stores, offline."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HANDOFF_")}
    env.update(
        HANDOFF_DATA_DIR=str(settings.data_dir),
        HANDOFF_DATABASE_URL=settings.resolved_database_url(),
        HANDOFF_ARTIFACT_DIR=str(settings.resolved_artifact_dir()),
        HANDOFF_ARTIFACT_STORE=settings.resolved_artifact_store(),
        HANDOFF_MODEL="offline",
    )
    return env


@dataclass(frozen=True)
class Exit:
    """How one CLI process ended."""

    code: int
    killed: bool
    cpu: float
    """CPU seconds the process used, user + system."""
    stderr: str


class Running(Protocol):
    """A started ``handoff`` process, as ``launch`` watches it."""

    pid: int

    def ended(self) -> tuple[int, float] | None:
        """Its exit code and the CPU seconds it used, once it has ended; None before."""


Start = Callable[[Sequence[str], dict[str, str], Path, IO[str]], Running]
"""How a ``handoff`` process is started: arguments, environment, folder, stderr."""


@dataclass
class Spawned:
    """``handoff`` started from its script, a new interpreter, as a person starts it."""

    process: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.process.pid

    def ended(self) -> tuple[int, float] | None:
        # os.wait4, not Popen.wait: it also says what CPU the process used
        pid, status, usage = os.wait4(self.process.pid, os.WNOHANG)
        if not pid:
            return None
        self.process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        return self.process.returncode, usage.ru_utime + usage.ru_stime


def spawn(args: Sequence[str], env: dict[str, str], cwd: Path, stderr: IO[str]) -> Spawned:
    """Start ``handoff *args`` from the installed script (``python -m app.cli`` without it)."""
    command = [str(HANDOFF)] if HANDOFF.exists() else [sys.executable, "-m", "app.cli"]
    return Spawned(
        subprocess.Popen(
            [*command, *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )
    )


def launch(
    settings: Settings, args: Sequence[str], kill_at: float | None, start: Start = spawn
) -> Exit:
    """Run ``handoff *args`` on the settings' stores; SIGKILL it once it has used
    ``kill_at`` seconds of CPU.

    CPU time, not wall time: on a shared machine the wall time of one run swings several
    fold with the other load (2.6 s to 11.3 s between two measurements here), so a wall-
    clock moment drawn from one measurement lands in a different part of the next run;
    the CPU a run needs hardly moves. The process runs in the store's folder, so no
    ``.env`` of the caller's reaches it.
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + PROCESS_TIMEOUT
    with tempfile.TemporaryFile("w+") as stderr:
        process = start(args, cli_env(settings), settings.data_dir, stderr)
        while (ended := process.ended()) is None:
            if kill_at is not None and cpu_seconds(process.pid) >= kill_at:
                kill(process.pid)
            elif time.monotonic() > deadline:
                kill(process.pid)
                raise RuntimeError(f"handoff {' '.join(args)} hung for {PROCESS_TIMEOUT:.0f} s")
            time.sleep(POLL)
        code, cpu = ended
        stderr.seek(0)
        return Exit(code, code == -signal.SIGKILL, cpu, stderr.read())


def kill(pid: int) -> None:
    """SIGKILL a process that may have ended and been reaped since its last look."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended on its own: ``ended`` says how, next look
        pass


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a running process has used, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):  # ended (and reaped) between two looks
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


# -- the reference and the checks ---------------------------------------------------------


def stored_ids(workflow: Workflow) -> list[str]:
    """Every artifact id in the workflow's store (the stores list them; the port does not)."""
    store = workflow.context.store
    if not isinstance(store, ArtifactStoreBase):
        raise TypeError(f"P6 checks the project's artifact stores, not {type(store).__name__}")
    return store.ids()


def footprint(settings: Settings) -> tuple[bool, int, int, int]:
    """Whether the thread exists, and its checkpoints, ledger rows and stored artifacts."""
    with Workflow(settings) as workflow:
        return (
            workflow.threads_has(THREAD),
            workflow.checkpoint_count(THREAD),
            len(workflow.context.ledger.runs(THREAD)),
            len(stored_ids(workflow)),
        )


def reference_run(
    backend: str, root: Path, name: str, server: str | None, start: Start = spawn
) -> Reference:
    """One uninterrupted run on a fresh store: its article, nodes and wall time."""
    with fresh_store(backend, root, name, server) as settings:
        ended = launch(settings, ["run", *TASK, "--thread", THREAD], None, start)
        if ended.code != ExitCode.COMPLETED:
            raise RuntimeError(f"P6 reference run on {backend} exited {ended.code}: {ended.stderr}")
        with Workflow(settings) as workflow:
            nodes = frozenset(
                run.node_id for run in workflow.history(THREAD) if run.status == "succeeded"
            )
            return Reference(workflow.artifact(THREAD, "article"), nodes, ended.cpu)


def measure_reference(
    backend: str, root: Path, server: str | None, pool: ThreadPoolExecutor, start: Start = spawn
) -> Reference:
    """``REFERENCE_RUNS`` uninterrupted runs on the pool; the span is their median."""
    runs = list(
        pool.map(
            lambda n: reference_run(backend, root, f"reference-{n}", server, start),
            range(REFERENCE_RUNS),
        )
    )
    if len({run.article for run in runs}) != 1 or len({run.nodes for run in runs}) != 1:
        raise RuntimeError(f"P6: uninterrupted runs on {backend} disagree; nothing to compare")
    return Reference(runs[0].article, runs[0].nodes, statistics.median(run.span for run in runs))


def check(trial: Trial, settings: Settings, reference: Reference, last: Exit) -> None:
    """Judge a trial's thread after its last process: completed, identical, no duplicates."""
    with Workflow(settings) as workflow:
        if not workflow.threads_has(THREAD):
            trial.problems.append("the thread does not exist")
            return
        outcome = workflow.outcome(THREAD)
        runs = workflow.history(THREAD)
        done = Counter(
            (run.node_id, run.input_hash)
            for run in runs
            if run.status == "succeeded" and not run.reused
        )
        trial.duplicate_runs = sum(count - 1 for count in done.values())
        if trial.duplicate_runs:
            twice = sorted(node for (node, _), count in done.items() if count > 1)
            trial.problems.append(f"ran twice with the same input: {', '.join(twice)}")
        store = workflow.context.store
        for artifact_id in stored_ids(workflow):
            shas = [ref.sha256 for ref in store.history(artifact_id)]
            if len(shas) != len(set(shas)):
                trial.duplicate_revisions += len(shas) - len(set(shas))
                trial.problems.append(f"{artifact_id} repeats content in revisions of {len(shas)}")
        missing = reference.nodes - {node for node, _ in done}
        running = [f"{run.node_id}#{run.attempt}" for run in runs if run.status == "running"]
        ended = last.code == ExitCode.COMPLETED or (
            last.code == ExitCode.ALREADY_FINISHED and trial.kills > 0
        )
        trial.completed = (
            ended and outcome.result_status == "completed" and not missing and not running
        )
        if not ended:
            trial.problems.append(f"last process exited {last.code}: {last.stderr.strip()[-300:]}")
        if outcome.result_status != "completed":
            trial.problems.append(f"outcome {outcome.state.value} / {outcome.result_status}")
        if missing:
            trial.problems.append(f"nodes never succeeded: {', '.join(sorted(missing))}")
        if running:
            trial.problems.append(f"attempts left running: {', '.join(running)}")
        if outcome.article is not None:
            trial.mismatch = workflow.artifact(THREAD, "article") != reference.article
            if trial.mismatch:
                trial.problems.append("the article differs from the reference")


# -- trials -------------------------------------------------------------------------------


def run_trial(
    backend: str,
    index: int,
    seed: int,
    reference: Reference,
    root: Path,
    server: str | None,
    max_kills: int = MAX_KILLS,
    start: Start = spawn,
) -> Trial:
    """Kill and resume one fresh thread at random moments until it ends; then check it."""
    rng = random.Random(f"{seed}:{index}")
    trial = Trial(index)
    with fresh_store(backend, root, f"trial-{index:03d}", server) as settings:
        try:
            ended = kill_until_done(trial, settings, rng, reference.span, max_kills, start)
            check(trial, settings, reference, ended)
        except Exception as error:  # a trial that cannot even be judged is reported, with its seed
            trial.problems.append(f"{type(error).__name__}: {error}")
    return trial


def kill_until_done(
    trial: Trial,
    settings: Settings,
    rng: random.Random,
    span: float,
    max_kills: int,
    start: Start = spawn,
) -> Exit:
    """Start the thread, then resume it, killing each process at a random moment in
    ``span`` until one ends on its own (the one after ``max_kills`` kills always may)."""
    before = (False, 0, 0, 0)
    started = False
    while True:
        args = ["resume", THREAD] if started else ["run", *TASK, "--thread", THREAD]
        kill_at = rng.random() * span if trial.kills < max_kills else None
        ended = launch(settings, args, kill_at, start)
        if ended.code == ExitCode.THREAD_BUSY and trial.busy < BUSY_RETRIES:
            trial.busy += 1
            time.sleep(BUSY_PAUSE)
            continue
        if not ended.killed:
            trial.steps.append(f"{args[0]} exit {ended.code}")
            return ended
        trial.kills += 1
        after = footprint(settings)
        mid_run = after != before
        trial.kills_mid_run += mid_run
        where = "mid-run" if mid_run else "start-up"
        trial.steps.append(f"{args[0]} killed at {ended.cpu:.2f} s CPU ({where})")
        started, before = after[0], after


def crash_loop(
    backend: str,
    *,
    trials: int = TRIALS,
    seed: int = DEFAULT_SEED,
    jobs: int = JOBS,
    max_kills: int = MAX_KILLS,
    server: str | None = None,
    root: Path | None = None,
    start: Start = spawn,
) -> Summary:
    """Measure the reference, then run ``trials`` trials ``jobs`` at a time.

    ``start`` starts each ``handoff`` process: from its script (``spawn``) unless a
    caller has a faster way to a fresh process running the same CLI.
    """
    if trials < 1 or jobs < 1 or max_kills < 0:
        raise ValueError("trials and jobs must be at least 1, max_kills at least 0")
    with scratch_dir("p6") if root is None else nullcontext(root) as folder:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            reference = measure_reference(backend, folder, server, pool, start)
            began = time.perf_counter()
            done = list(
                pool.map(
                    lambda n: run_trial(
                        backend, n, seed, reference, folder, server, max_kills, start
                    ),
                    range(trials),
                )
            )
            wall = time.perf_counter() - began
    return Summary(backend, seed, reference, done, wall)


# -- report -------------------------------------------------------------------------------


def print_summaries(summaries: Sequence[Summary], max_kills: int, jobs: int) -> None:
    """The table, then every trial that is not clean, with its steps and seed."""
    print_table(
        f"P6 crash loop: SIGKILL at random moments, resume until done "
        f"(at most {max_kills} kills a trial, {jobs} trials at once)",
        [
            "backend",
            "trials",
            "completed",
            "mismatches",
            "duplicate node runs",
            "duplicate revisions",
            "kills",
            "kills mid-run",
            "busy retries",
            "span CPU s",
            "wall s",
            "seed",
        ],
        [
            [
                summary.backend,
                str(len(summary.trials)),
                *(str(count) for count in summary.totals().values()),
                f"{summary.reference.span:.2f}",
                f"{summary.wall:.1f}",
                str(summary.seed),
            ]
            for summary in summaries
        ],
    )
    for summary in summaries:
        for line in failure_lines(summary):
            print(line)


def failure_lines(summary: Summary) -> list[str]:
    """A line per trial that is not clean: what failed and every process it ran, with the
    seed that draws the same kill moments again."""
    return [
        f"FAILED {summary.backend} trial {trial.index} (seed {summary.seed}): "
        f"{'; '.join(trial.problems) or 'no problem recorded'}; steps: {', '.join(trial.steps)}"
        for trial in summary.failures
    ]


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """``--quick`` and ``--repeats`` (like every benchmark), plus P6's own options."""
    parser = argparse.ArgumentParser(description="P6 crash loop")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TRIALS} trials a backend")
    parser.add_argument(
        "--repeats", type=int, default=None, help="ignored: P6 counts trials (see --trials)"
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=None,
        help=f"trials per backend (default {TRIALS}, {QUICK_TRIALS} with --quick)",
    )
    parser.add_argument("--backend", choices=BACKENDS, action="append", help="default: both")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--jobs", type=int, default=JOBS, help="trials at once")
    parser.add_argument("--max-kills", type=int, default=MAX_KILLS, help="kills per trial at most")
    parser.add_argument("--postgres-url", default=None, help="server (default: see module doc)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.trials is None:
        args.trials = QUICK_TRIALS if args.quick else TRIALS
    if args.trials < 1 or args.jobs < 1 or args.max_kills < 0:
        parser.error("--trials and --jobs must be at least 1, --max-kills at least 0")
    return args


def main(argv: Sequence[str] | None = None) -> list[Row]:
    """Run and print P6 on each backend; returns a row per backend that could run."""
    args = parse(argv)
    summaries = []
    for backend in args.backend or BACKENDS:
        server = None
        if backend == "postgres":
            server = postgres_url(args.postgres_url)
            problem = postgres_problem(server)
            if problem is not None:
                print(f"\nP6 crash loop on postgres: SKIPPED, {server} is unreachable: {problem}")
                continue
        summaries.append(
            crash_loop(
                backend,
                trials=args.trials,
                seed=args.seed,
                jobs=args.jobs,
                max_kills=args.max_kills,
                server=server,
            )
        )
    print_summaries(summaries, args.max_kills, args.jobs)
    return [
        Row(
            bench="P6",
            case=f"crash loop, {summary.backend}",
            unit="trials",
            baseline_name="trials",
            baseline=Measure.exact(len(summary.trials)),
            candidate_name="clean",
            candidate=Measure.exact(len(summary.trials) - len(summary.failures)),
            target="all completed, identical, no duplicates",
            passed=summary.ok,
        )
        for summary in summaries
    ]


if __name__ == "__main__":
    main()
