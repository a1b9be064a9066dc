"""Static breakpoints: a run stops before or after a named node, and a resume goes on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.errors import UnknownNode
from app.exit_codes import ExitCode
from app.workflow import Workflow
from contracts import TaskState
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE, nodes_run


def test_a_run_stops_before_a_node_and_resumes_without_a_decision(workflow: Workflow) -> None:
    stopped = workflow.run(OBJECTIVE, "t-before", interrupt_before=["writer"])
    assert stopped.state == TaskState.WORKING and stopped.reason == "next step: writer"
    assert workflow.status("t-before").next_nodes == ("writer",)
    assert workflow.pending("t-before") is None, "no decision is asked for"
    assert "writer" not in nodes_run(workflow, "t-before")
    ended = workflow.resume("t-before")
    assert ended.state == TaskState.COMPLETED and ended.result_status == "completed"
    assert nodes_run(workflow, "t-before").count("writer") == 1


def started_after(workflow: Workflow, thread: str, node: str) -> tuple[str, ...]:
    """The nodes the graph started in the step after ``node``'s first step in ``thread``."""
    history = list(reversed(list(workflow.graph.get_state_history(workflow.config(thread)))))
    for older, newer in zip(history, history[1:], strict=False):
        if node in older.next:
            return tuple(newer.next)
    raise AssertionError(f"{node} never ran in thread {thread!r}")


def test_a_run_stops_after_a_node(workflow: Workflow) -> None:
    through = workflow.run(OBJECTIVE, "t-through")
    assert through.state == TaskState.COMPLETED
    after_review = started_after(workflow, "t-through", "reviewer")
    assert after_review, "the uninterrupted run went on after the reviewer"
    stopped = workflow.run(OBJECTIVE, "t-after", interrupt_after=["reviewer"])
    assert stopped.state == TaskState.WORKING
    assert "reviewer" in nodes_run(workflow, "t-after")
    assert workflow.status("t-after").next_nodes == after_review, "stopped right after it"
    assert workflow.resume("t-after").state == TaskState.COMPLETED


def test_a_resume_stops_at_its_own_breakpoints_and_refuses_one_at_no_node(
    workflow: Workflow,
) -> None:
    workflow.run(OBJECTIVE, "t-again", interrupt_before=["writer"])
    with pytest.raises(UnknownNode, match=r"interrupt_after names \['writr'\]"):
        workflow.resume("t-again", interrupt_after=["writr"])
    assert "writer" not in nodes_run(workflow, "t-again"), "the refused resume ran nothing"
    stopped = workflow.resume("t-again", interrupt_after=["writer"])
    assert stopped.state == TaskState.WORKING
    assert nodes_run(workflow, "t-again").count("writer") == 1
    assert workflow.status("t-again").next_nodes, "it waits at the step after the writer"
    assert workflow.resume("t-again").state == TaskState.COMPLETED


def test_a_breakpoint_at_no_node_is_refused_listing_the_nodes(workflow: Workflow) -> None:
    with pytest.raises(UnknownNode, match=r"interrupt_before names \['writr'\], no node of gra"):
        workflow.run(OBJECTIVE, "t-typo", interrupt_before=["writr"])
    nodes = [name for name in workflow.graph.get_graph().nodes if not name.startswith("__")]
    assert {"writer", "reviewer"} <= set(nodes)
    with pytest.raises(UnknownNode, match=re.escape(f"nodes: {', '.join(nodes)}; nothing was run")):
        workflow.run(OBJECTIVE, "t-typo", interrupt_after=["reveiwer"])
    assert not workflow.threads_has("t-typo"), "nothing was written"


@pytest.mark.e2e
def test_the_cli_stops_at_a_breakpoint_and_resume_goes_on(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ran = handoff(
        "run", OBJECTIVE, "--thread", "t-bp", "--interrupt-before", "writer", data_dir=data
    )
    assert ran.returncode == ExitCode.WAITING_FOR_HUMAN, ran.stderr
    assert "reason: next step: writer" in ran.stdout
    assert "stopped at a breakpoint; go on: " in ran.stdout and "resume t-bp\n" in ran.stdout
    assert "paused: at a breakpoint" in ran.stderr
    again = handoff("resume", "t-bp", "--interrupt-after", "writer", data_dir=data)
    assert again.returncode == ExitCode.WAITING_FOR_HUMAN, again.stderr
    assert "writer:" in again.stderr and "resume t-bp\n" in again.stdout
    resumed = handoff("resume", "t-bp", data_dir=data)
    assert resumed.returncode == ExitCode.COMPLETED, resumed.stderr
    typo = handoff("run", OBJECTIVE, "--interrupt-after", "writr", data_dir=data)
    assert typo.returncode == ExitCode.USAGE
    assert "no node of graph 'handoff'; nodes: research" in one_line_error(typo)
