"""A second graph beside the workflow: declared in langgraph.json, run by every way in.

The graph is ``tests.second_graph``: its module and a langgraph.json entry are all it
takes. A thread records its graph, and is resumed and read with it; the other graph's
Workflow refuses it, naming both.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.errors import UnknownGraph, WrongGraph
from app.exit_codes import ExitCode
from app.project_graphs import MAIN_GRAPH, project_graphs
from app.settings import PROJECT_ROOT, Settings
from app.workflow import Workflow
from contracts import TaskState
from tests import second_graph
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE


def with_second_graph(folder: Path) -> Path:
    """The project's langgraph.json with the second graph's entry added, in ``folder``."""
    config = json.loads((PROJECT_ROOT / "langgraph.json").read_text(encoding="utf-8"))
    config["graphs"][second_graph.GRAPH_ID] = second_graph.entry()
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.fixture
def two_graphs(settings: Settings, tmp_path: Path) -> Settings:
    return settings.with_overrides(graphs_config=with_second_graph(tmp_path))


def test_langgraph_json_lists_the_graphs_the_main_one_first(two_graphs: Settings) -> None:
    graphs = project_graphs(two_graphs.graphs_config)
    assert list(graphs) == [MAIN_GRAPH, "summarise"]
    assert graphs["summarise"].wiring() is second_graph.WIRING
    assert list(project_graphs(PROJECT_ROOT / "langgraph.json")) == [MAIN_GRAPH]


def test_the_second_graph_runs_records_itself_and_is_read_with_its_graph(
    two_graphs: Settings,
) -> None:
    with Workflow(two_graphs, graph="summarise") as summaries:
        outcome = summaries.run(OBJECTIVE, "t-sum")
        assert outcome.state == TaskState.COMPLETED and outcome.result_status == "completed"
        assert outcome.article is not None
        assert summaries.artifact("t-sum", "draft") == f"# Summary\n\n{OBJECTIVE}\n".encode()
        assert summaries.status("t-sum").outcome is not None
        assert [run.node_id for run in summaries.history("t-sum")] == ["summarise", "publish"]
        assert summaries.graph_of("t-sum") == "summarise"
        summaries.run(OBJECTIVE, "t-sum-2")
        saver = summaries.saver
        configs = saver.list({"configurable": {"thread_id": "t-sum-2"}})
        assert {saved.metadata.get("graph_id") for saved in configs} == {"summarise"}

    with Workflow(two_graphs) as main:
        assert main.graph_id == MAIN_GRAPH
        assert main.graph_of("t-sum") == "summarise"
        for call in (main.status, main.state, main.pending):
            with pytest.raises(WrongGraph, match="'t-sum' belongs to graph 'summarise', not "):
                call("t-sum")
        with pytest.raises(WrongGraph, match="graph 'summarise', not 'handoff'"):
            main.resume("t-sum")
        with pytest.raises(WrongGraph, match="graph 'summarise', not 'handoff'"):
            main.cancel("t-sum", "wrong graph")


def test_a_main_thread_is_refused_by_the_second_graph_and_an_unknown_graph_is_named(
    two_graphs: Settings,
) -> None:
    with Workflow(two_graphs) as main:
        main.run(main.task(OBJECTIVE, policies={"require_approval": True}), "t-main")
        assert main.pending("t-main") is not None
        assert main.graph_of("t-main") == MAIN_GRAPH
    with Workflow(two_graphs, graph="summarise") as summaries:
        with pytest.raises(WrongGraph, match="'t-main' belongs to graph 'handoff', not 'summ"):
            summaries.resume("t-main", {"action": "approve"})
        with pytest.raises(WrongGraph, match="--graph handoff"):
            summaries.status("t-main")
    with pytest.raises(UnknownGraph, match="no graph 'sumarise' .*graphs: handoff, summarise"):
        Workflow(two_graphs, graph="sumarise")


@pytest.mark.e2e
def test_the_cli_runs_the_second_graph_and_reads_its_threads_with_it(tmp_path: Path) -> None:
    env = {"HANDOFF_GRAPHS_CONFIG": str(with_second_graph(tmp_path))}
    data = tmp_path / "data"
    ran = handoff(
        "run", OBJECTIVE, "--graph", "summarise", "--thread", "t-s", data_dir=data, env=env
    )
    assert ran.returncode == ExitCode.COMPLETED, ran.stderr
    assert "summarise:" in ran.stderr and "publish:" in ran.stderr
    assert handoff("run", OBJECTIVE, "--thread", "t-m", data_dir=data, env=env).returncode == 0

    shown = handoff("show", "t-s", data_dir=data, env=env)  # the thread's graph, unnamed
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"# Summary\n\n{OBJECTIVE}\n"
    status = handoff("status", "t-s", "--json", data_dir=data, env=env)
    assert json.loads(status.stdout)["outcome"]["state"] == "TASK_STATE_COMPLETED"
    history = handoff("history", "t-s", "--json", data_dir=data, env=env)
    assert [run["node_id"] for run in json.loads(history.stdout)] == ["summarise", "publish"]
    listed = handoff("threads", "--json", data_dir=data, env=env)
    assert [row["thread_id"] for row in json.loads(listed.stdout)] == ["t-m", "t-s"]

    wrong = handoff("status", "t-s", "--graph", "handoff", data_dir=data, env=env)
    assert wrong.returncode == ExitCode.USAGE
    assert "thread 't-s' belongs to graph 'summarise', not 'handoff'" in one_line_error(wrong)
    wrong = handoff("resume", "t-m", "--graph", "summarise", data_dir=data, env=env)
    assert wrong.returncode == ExitCode.USAGE
    assert "thread 't-m' belongs to graph 'handoff', not 'summarise'" in one_line_error(wrong)
    unknown = handoff("run", OBJECTIVE, "--graph", "nope", data_dir=data, env=env)
    assert unknown.returncode == ExitCode.USAGE
    assert "no graph 'nope'" in one_line_error(unknown)
    assert "graphs: handoff, summarise" in one_line_error(unknown)


@pytest.mark.e2e
def test_sweep_and_prune_take_every_graphs_threads_each_with_its_own_graph(
    tmp_path: Path,
) -> None:
    env = {"HANDOFF_GRAPHS_CONFIG": str(with_second_graph(tmp_path))}
    data = tmp_path / "data"
    summarised = handoff(
        "run", OBJECTIVE, "--graph", "summarise", "--thread", "t-s", data_dir=data, env=env
    )
    assert summarised.returncode == ExitCode.COMPLETED, summarised.stderr
    waiting = handoff(
        "run",
        OBJECTIVE,
        "--thread",
        "t-w",
        "--require-approval",
        "--decision-timeout",
        "1s",
        data_dir=data,
        env=env,
    )
    assert waiting.returncode == ExitCode.WAITING_FOR_HUMAN, waiting.stderr
    time.sleep(1.1)
    swept = handoff("sweep", data_dir=data, env=env)
    assert swept.returncode == 0, swept.stderr
    assert "expired t-w: TASK_STATE_REJECTED" in swept.stdout
    assert "total: 1 expired requests answered" in swept.stdout

    pruned = handoff("prune", "--older-than", "0s", "--json", data_dir=data, env=env)
    assert pruned.returncode == 0, pruned.stderr
    assert sorted(t["thread_id"] for t in json.loads(pruned.stdout)["pruned"]) == ["t-s", "t-w"]
    listed = handoff("threads", "--json", data_dir=data, env=env)
    assert json.loads(listed.stdout) == []
