"""Crash anywhere, resume exactly once: real subprocesses, real SIGKILL, SQLite and PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from langgraph.runtime import Runtime

from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from bench._common import QUESTIONS
from graphs import WIRING
from graphs.declare import keys_of
from tests import forked
from tests.backends import backend_env
from tests.cli import HANDOFF
from tests.conftest import OBJECTIVE
from tests.routes import handed_on_by

TASK = [OBJECTIVE, *(arg for question in QUESTIONS for arg in ("--question", question))]
"""The objective and two sub-questions: research runs three branches (q-1, q-2, q-3)."""
KILLABLE = ("start", "after_artifact", "before_return")
IN_BRANCH = "key"
"""Stands for a branch task's key in a kill point, until the baseline run gives the key."""
KILL_POINTS = [
    f"{spec.name}:{point}"
    for spec, _ in WIRING
    for point in spec.fault_points()
    if point in KILLABLE
] + [
    f"{spec.name}[{IN_BRANCH}]:{point}"
    for spec, _ in WIRING
    if spec.branch is not None
    for point in spec.fault_points()
    if point in KILLABLE
]
"""Every point a kill rule may name, from the node declarations: between nodes (start),
inside a node after it wrote an artifact, and after its attempt was recorded as finished
but before LangGraph saw the result (before_return); for a branch node, also inside one
branch task (the middle key of its fan-out, ``Baseline.keys``: q-2 of research's three)
while its sibling tasks run beside it or have finished."""


@dataclass(frozen=True)
class Baseline:
    """An uninterrupted run with the same input: its article and the nodes it ran."""

    article: bytes
    nodes: frozenset[str]
    keys: dict[str, str]
    """Each branch node's middle key of the fan-out from the run's last state."""

    def point(self, point: str) -> str:
        """``point`` with a branch task's key in place of ``IN_BRANCH``."""
        node = point.partition("[")[0]
        return point.replace(f"[{IN_BRANCH}]", f"[{self.keys.get(node, IN_BRANCH)}]")


def handoff(
    where: Path | Settings, *args: str, fault: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh process on a data folder, or on a test backend's settings."""
    if isinstance(where, Settings):
        env = backend_env(where)
    else:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
        env["HANDOFF_DATA_DIR"] = str(where)
    if fault:
        env["HANDOFF_FAULT"] = fault
    return forked.run(args, env=env)


def open_workflow(where: Path | Settings) -> Workflow:
    return Workflow(where if isinstance(where, Settings) else Settings(data_dir=where))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    """The article of an uninterrupted run with the same input, and its path."""
    data = tmp_path_factory.mktemp("baseline")
    result = handoff(data, "run", *TASK, "--thread", "t-base")
    assert result.returncode == 0, result.stderr
    with open_workflow(data) as workflow:
        nodes = frozenset(run.node_id for run in workflow.history("t-base"))
        state, runtime = workflow.state("t-base"), Runtime(context=workflow.context)
        keys = {
            spec.name: middle(keys_of(spec, state, runtime))
            for spec, _ in WIRING
            if spec.branch is not None and spec.name in nodes
        }
        return Baseline(workflow.artifact("t-base", "article"), nodes, keys)


def middle(keys: list[str]) -> str:
    """The key in the middle of a fan-out's sorted keys (its only one, for one task)."""
    return sorted(keys)[len(keys) // 2]


@pytest.mark.slow
@pytest.mark.parametrize("point", KILL_POINTS)
def test_sigkill_at_any_point_resumes_to_the_same_article_without_repeating_work(
    backend: Settings, baseline: Baseline, point: str
) -> None:
    point = baseline.point(point)
    killed = handoff(backend, "run", *TASK, "--thread", "t-crash", fault=f"kill:{point}")
    if point.split(":")[0].partition("[")[0] not in baseline.nodes:
        assert killed.returncode == ExitCode.COMPLETED, "a node off the path is never reached"
        return
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    resumed = handoff(backend, "resume", "t-crash")
    assert resumed.returncode == ExitCode.COMPLETED, resumed.stderr

    with open_workflow(backend) as workflow:
        assert workflow.artifact("t-crash", "article") == baseline.article
        runs = workflow.history("t-crash")
        done = Counter(
            (run.node_id, run.input_hash)
            for run in runs
            if run.status == "succeeded" and not run.reused
        )
        assert max(done.values()) == 1, f"a completed node ran twice: {done}"
        assert {node for node, _ in done} == baseline.nodes
        assert not [run for run in runs if run.status == "running"], "no attempt left running"
        store = workflow.context.store
        for artifact_id in store.ids():
            shas = [ref.sha256 for ref in store.history(artifact_id)]
            assert len(shas) == len(set(shas)) == 1, f"{artifact_id} has revisions {shas}"
        if point.endswith("before_return"):
            node = point.split(":")[0].partition("[")[0]
            assert any(run.reused and run.node_id == node for run in runs)
            # a replayed result hands on the tool calls of the work it replays; a sibling
            # attempt the kill cut short keeps its own calls in its audit row, handed on by none
            joined = handed_on_by(workflow, "t-crash", "join_research")
            called = [
                r
                for run in runs
                if run.node_id == "research" and run.status == "succeeded"
                for r in run.tool_receipts
            ]
            assert sorted(r.call_id for r in joined.tool_receipts) == sorted(
                r.call_id for r in called
            )


@pytest.mark.slow
def test_a_branch_killed_after_its_siblings_finished_is_the_only_work_redone(
    backend: Settings, baseline: Baseline, tmp_path: Path
) -> None:
    """q-2 is held at its start until q-1 and q-3 have finished, then killed mid-work."""
    gate = tmp_path / "open-q-2"
    env = backend_env(backend)
    env["HANDOFF_FAULT"] = f"wait:research[q-2]:{gate},kill:research[q-2]:after_artifact"
    command = [str(HANDOFF)] if HANDOFF.exists() else [sys.executable, "-m", "app.cli"]
    process = subprocess.Popen(
        [*command, "run", *TASK, "--thread", "t-branch"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        finished: list[str] = []
        while len(finished) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
            with open_workflow(backend) as workflow:
                runs = workflow.history("t-branch") if "t-branch" in workflow.threads() else []
            finished = [
                r.input_hash for r in runs if r.node_id == "research" and r.status == "succeeded"
            ]
        assert len(finished) == 2, "q-1 and q-3 finish while q-2 waits"
        gate.touch()
        assert process.wait(timeout=120) == -signal.SIGKILL, process.stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    resumed = handoff(backend, "resume", "t-branch")
    assert resumed.returncode == ExitCode.COMPLETED, resumed.stderr
    with open_workflow(backend) as workflow:
        assert workflow.artifact("t-branch", "article") == baseline.article
        runs = workflow.history("t-branch")
    worked = [r for r in runs if r.status == "succeeded" and not r.reused]
    again = [r for r in worked if r.input_hash in finished]
    assert len(again) == 2, "a branch that finished before the kill is never worked again"
    q2 = [r for r in worked if r.node_id == "research" and r.input_hash not in finished]
    assert len(q2) == 1, "the killed branch ran to its end once, on resume"
    done = Counter((r.node_id, r.input_hash) for r in worked)
    assert max(done.values()) == 1, f"a completed node ran twice: {done}"
    assert not [run for run in runs if run.status == "running"], "no attempt left running"


@pytest.mark.e2e
def test_resume_refuses_an_unknown_thread_without_touching_the_database(backend: Settings) -> None:
    result = handoff(backend, "resume", "t-unknown")
    assert result.returncode == ExitCode.NOT_FOUND
    assert "no thread 't-unknown'" in result.stderr
    with open_workflow(backend) as workflow:
        assert workflow.threads() == []


@pytest.mark.e2e
def test_resume_refuses_a_finished_thread_and_shows_its_outcome(backend: Settings) -> None:
    assert handoff(backend, "run", OBJECTIVE, "--thread", "t-done").returncode == 0
    with open_workflow(backend) as workflow:
        before = workflow.checkpoint_count("t-done")
        runs_before = len(workflow.history("t-done"))
    result = handoff(backend, "resume", "t-done")
    assert result.returncode == ExitCode.ALREADY_FINISHED
    assert "is complete" in result.stderr
    assert "state: TASK_STATE_COMPLETED" in result.stdout
    with open_workflow(backend) as workflow:
        assert workflow.checkpoint_count("t-done") == before
        assert len(workflow.history("t-done")) == runs_before
