"""A node added as docs/adapt.md says runs, is audited, resumes after a
kill, and shows in status; a declaration that is left incomplete fails the build."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from typing_extensions import TypedDict

from app.settings import Settings
from app.workflow import Workflow
from contracts import DraftArticle, ResearchBundle, TaskSpec
from graphs import WIRING, NodeCall, NodeResult, build_graph, node
from graphs.channels import ChannelError
from tests.conftest import nodes_run, passes
from tests.extension_claim_check import (
    OBJECTIVE,
    WIRING_WITH_CLAIM_CHECK,
    ClaimCheck,
    claim_check,
    route_after_claim_check,
)
from tests.routes import check_handoffs_follow_the_route

ROOT = Path(__file__).resolve().parents[2]


def extended(settings: Settings) -> Workflow:
    return Workflow(settings, wiring=WIRING_WITH_CLAIM_CHECK)


def test_the_added_node_runs_between_writer_and_reviewer_and_is_audited(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    with extended(settings) as workflow:
        outcome = workflow.run(OBJECTIVE, "t-ext")
        assert outcome.result_status == "completed"
        path = ("research", "join_research", "writer", "claim_check", "reviewer", "finalize")
        assert passes(nodes_run(workflow, "t-ext"), *path) == [*path]
        [audit] = [run for run in workflow.history("t-ext") if run.node_id == "claim_check"]
        assert audit.status == "succeeded" and audit.agent is None
        check = workflow.graph.get_state(workflow.config("t-ext")).values["claim_check"]
        assert isinstance(check, ClaimCheck), "the checkpoint revives the new contract"
        assert "unregistered" not in caplog.text.lower() and "blocked" not in caplog.text.lower()
        assert check.checked and check.unknown == []
        check_handoffs_follow_the_route(workflow)
        names = list(workflow.graph.get_graph().nodes)
        assert names.index("claim_check") > names.index("writer")


@pytest.mark.e2e
def test_the_added_node_resumes_after_a_kill_and_shows_in_status(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFF_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    script = [sys.executable, "-m", "tests.extension_claim_check"]
    data = str(tmp_path / "data")
    killed = subprocess.run(
        [*script, "run", data, "t-kill"],
        env={**env, "HANDOFF_FAULT": "kill:claim_check:start"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with extended(Settings(data_dir=Path(data))) as workflow:
        assert workflow.status("t-kill").next_nodes == ("claim_check",)
    resumed = subprocess.run(
        [*script, "resume", data, "t-kill"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    with extended(Settings(data_dir=Path(data))) as workflow:
        runs = workflow.history("t-kill")
        done = [run.node_id for run in runs if run.status == "succeeded"]
        path = ("research", "join_research", "writer", "claim_check", "reviewer", "finalize")
        assert passes(done, *path) == [*path]
        assert len(set(done)) == len(done), f"a step done before the kill ran again: {done}"
        assert workflow.status("t-kill").outcome is not None


def test_the_shipped_workflow_rejects_a_fault_rule_for_a_node_it_does_not_have(
    settings: Settings,
) -> None:
    from app.faults.rules import InvalidFaultSpec

    with Workflow(settings.with_overrides(fault="kill:claim_check:start")) as plain:
        with pytest.raises(InvalidFaultSpec, match="names no node"):
            plain.context  # noqa: B018


class _Reads(TypedDict):
    task: TaskSpec
    draft: DraftArticle | None


class _WritesBundleAsDraft(TypedDict, total=False):
    draft: ResearchBundle | None


class _WritesNothing(TypedDict, total=False):
    pass


def _noop(call: NodeCall) -> NodeResult:
    return NodeResult({})


def test_a_channel_declared_with_another_contract_fails_the_build() -> None:
    clash = node("clash", reads=_Reads, writes=_WritesBundleAsDraft)(_noop)
    with pytest.raises(ChannelError, match="'draft' is DraftArticle in .* but ResearchBundle"):
        build_graph(wiring=(*WIRING, (clash, route_after_claim_check)))


def test_a_node_reading_a_channel_nobody_writes_fails_the_build() -> None:
    class Orphan(TypedDict):
        task: TaskSpec
        claim_check: ClaimCheck | None

    reader = node("reader", reads=Orphan, writes=_WritesNothing)(_noop)
    with pytest.raises(ChannelError, match=r"reads \['claim_check'\], which no node writes"):
        build_graph(wiring=(*WIRING, (reader, route_after_claim_check)))


def test_a_router_naming_a_node_that_is_not_wired_fails_the_build() -> None:
    def route_nowhere(state: Any) -> Literal["nowhere", "__end__"]:
        return "__end__"

    with pytest.raises(ValueError, match=r"names no node: \['nowhere'\]"):
        build_graph(wiring=(*WIRING, (claim_check, route_nowhere)))


def test_a_node_left_out_of_the_wiring_but_routed_to_fails_the_build() -> None:
    without = tuple(pair for pair in WIRING_WITH_CLAIM_CHECK if pair[0] is not claim_check)
    with pytest.raises(ValueError, match=r"names no node: \['claim_check'\]"):
        build_graph(wiring=without)


def test_a_node_whose_agent_has_no_implementation_fails_when_the_context_is_built(
    settings: Settings,
) -> None:
    from typing import Protocol, runtime_checkable

    from app.agents.models import ModelConfigError
    from app.services import build_context

    @runtime_checkable
    class Summarizer(Protocol):
        def run(self, request: Any) -> Any: ...

    summarize = node("summarize", reads=_Reads, writes=_WritesNothing, agent=Summarizer)(_noop)
    wiring = (*WIRING, (summarize, route_after_claim_check))
    with pytest.raises(ModelConfigError, match="'summarize' needs a Summarizer"):
        build_context(settings, wiring=wiring)


def test_an_agent_protocol_that_cannot_be_checked_fails_at_declaration() -> None:
    from typing import Protocol

    class Unchecked(Protocol):
        def run(self, request: Any) -> Any: ...

    with pytest.raises(TypeError, match="must be a @runtime_checkable Protocol"):
        node("unchecked", reads=_Reads, writes=_WritesNothing, agent=Unchecked)


BETWEEN_WRITER_AND_REVIEWER = "A node another agent reads"
"""The docs/adapt.md section that puts a node of the project's between writer and reviewer."""
ROUTE_TESTS = (
    "tests/app/test_breakpoints.py",
    "tests/app/test_budgets_and_recovery.py",
    "tests/app/test_handoff_routes.py",
    "tests/app/test_review_loop.py",
    "tests/app/test_staleness.py",
    "tests/graphs/test_approval.py",
)
"""Tests of the paths around review: each derives the route it expects from the graph."""


@pytest.mark.e2e
def test_the_tests_of_the_paths_around_review_pass_with_a_node_before_the_reviewer(
    tmp_path: Path,
) -> None:
    from tests.docs.test_snippets import PROJECT, SNIPPETS, _apply, reader_env

    copy = tmp_path / "project"
    copy.mkdir()
    for name in (*PROJECT, "tests"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / name)
    steps = [
        snippet
        for snippet in SNIPPETS
        if snippet.section == BETWEEN_WRITER_AND_REVIEWER
        and (snippet.language == "diff" or "file" in snippet.options)
    ]
    assert steps, f"docs/adapt.md has no section {BETWEEN_WRITER_AND_REVIEWER!r}"
    for snippet in steps:
        if snippet.language == "diff" and not _applies(snippet.text, copy):
            pytest.skip(
                "the page's diff is for the shipped graphs/graph.py, which this project "
                "changed: tests/docs/test_snippets.py holds the page to the shipped one"
            )
    for snippet in steps:
        _apply(snippet, copy)
    unit = "not e2e and not slow and not server and not postgres"
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", unit, *ROUTE_TESTS],
        cwd=copy,
        env=reader_env(PYTHONPATH=str(copy)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert " failed" not in ran.stdout and " passed" in ran.stdout


def _applies(diff: str, folder: Path) -> bool:
    """Whether ``diff`` applies to ``folder`` as it is (``patch --dry-run``)."""
    dry = ["patch", "-p1", "--forward", "--dry-run", "--no-backup-if-mismatch"]
    done = subprocess.run(dry, input=diff, cwd=folder, capture_output=True, text=True, timeout=60)
    return done.returncode == 0
