"""A second graph langgraph.json declares, served by the server's factory of its id."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore
from langgraph_sdk.runtime import _ReadRuntime

from app.errors import WrongGraph
from app.server import graph as server
from app.server.checkpointer import checkpointer
from app.settings import PROJECT_ROOT
from app.workflow import Workflow
from contracts import TaskSpec, TaskState
from tests import second_graph
from tests.conftest import OBJECTIVE
from tests.server.conftest import folder_settings


@pytest.fixture
def two_graphs(served_folder: Path) -> Path:
    """The served folder's langgraph.json has the second graph, and its .env names it."""
    config = json.loads((PROJECT_ROOT / "langgraph.json").read_text(encoding="utf-8"))
    config["graphs"][second_graph.GRAPH_ID] = second_graph.entry()
    path = served_folder / "langgraph.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with (served_folder / ".env").open("a", encoding="utf-8") as env:
        env.write(f"HANDOFF_GRAPHS_CONFIG={path}\n")
    return path


def test_langgraph_json_with_the_second_graph_is_valid(two_graphs: Path) -> None:
    from langgraph_cli.config import validate_config_file

    config = validate_config_file(two_graphs)
    assert config["graphs"]["summarise"]["path"] == "./app/server/graph.py:summarise"


def test_the_factory_of_the_second_graph_serves_it_and_its_thread_records_it(
    two_graphs: Path,
) -> None:
    factory = server.summarise  # type: ignore[attr-defined]  # made by the module's __getattr__
    assert factory.__name__ == "summarise"
    with pytest.raises(AttributeError, match="sumarise"):
        server.sumarise  # type: ignore[attr-defined]  # noqa: B018

    async def run_as_the_server_does() -> dict[str, Any]:
        # What the server hands a factory reading a thread (langgraph-api builds the same).
        runtime = _ReadRuntime(access_context="threads.read", user=None, store=InMemoryStore())
        config: Any = {"configurable": {"thread_id": "t-served-sum", "graph_id": "summarise"}}
        async with factory(config, runtime) as graph, checkpointer() as saver:
            assert sorted(graph.get_graph().nodes) == [
                "__end__",
                "__start__",
                "publish",
                "summarise",
            ]
            served = graph.copy(update={"checkpointer": saver})
            task = TaskSpec(task_id="served-sum", objective=OBJECTIVE)
            return await served.ainvoke({"task": task.model_dump(mode="json")}, config)

    output = asyncio.run(run_as_the_server_does())
    assert output["outcome"].state == TaskState.COMPLETED
    settings = folder_settings(two_graphs.parent).with_overrides(graphs_config=two_graphs)
    with Workflow(settings, graph="summarise") as summaries:
        assert summaries.graph_of("t-served-sum") == "summarise"
        assert summaries.outcome("t-served-sum").state == TaskState.COMPLETED
    with Workflow(settings) as main, pytest.raises(WrongGraph, match="'summarise', not 'han"):
        main.status("t-served-sum")
