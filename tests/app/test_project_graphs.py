"""A node module added to a ``nodes`` package and wired by no graph of langgraph.json is
refused by every way in, naming it; nodes another graph wires are not."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.project_graphs import MAIN_GRAPH, project_graph
from app.settings import Settings
from app.workflow import Workflow
from graphs.errors import WiringError

NODE_MODULE = """
    from typing import Any, Literal

    from graphs import NodeCall, NodeResult, node
    from tests.extension_tools import ProbeOutput
    from tests.graphs.test_omissions import TaskOnly


    @node("{name}", reads=TaskOnly, writes=ProbeOutput)
    def {name}(call: NodeCall) -> NodeResult:
        return NodeResult({{}})


    def to_end(state: Any) -> Literal["__end__"]:
        return "__end__"


    WIRING = (({name}, to_end),)
"""


@pytest.fixture
def adapted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project package ``adapted`` with a ``nodes`` package, importable; removed after."""
    (tmp_path / "adapted" / "nodes").mkdir(parents=True)
    (tmp_path / "adapted" / "__init__.py").write_text("")
    (tmp_path / "adapted" / "nodes" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "adapted"
    for name in [name for name in sys.modules if name.startswith("adapted")]:
        del sys.modules[name]


def write_node(package: Path, name: str) -> None:
    (package / "nodes" / f"{name}.py").write_text(textwrap.dedent(NODE_MODULE.format(name=name)))


def langgraph_json(folder: Path, *wired: str) -> Path:
    """A langgraph.json with the main graph and a graph per node module named."""
    graphs: dict[str, Any] = {MAIN_GRAPH: "./app/server/graph.py:make_graph"}
    for name in wired:
        graphs[name] = {"path": "./app/server/graph.py:" + name, "wiring": wiring_of(name)}
    config = folder / "langgraph.json"
    config.write_text(json.dumps({"graphs": graphs}))
    return config


def wiring_of(name: str) -> str:
    return f"adapted.nodes.{name}:WIRING"


def test_a_node_module_no_graph_wires_is_refused_naming_it(adapted: Path) -> None:
    for name in ("first", "forgotten"):
        write_node(adapted, name)
    config = langgraph_json(adapted.parent, "first")
    with pytest.raises(WiringError, match=r"adapted.nodes declares \['forgotten'\], which no"):
        project_graph(config, None)
    with pytest.raises(WiringError, match=r"\['forgotten'\]"):
        project_graph(config, "first")


def test_nodes_each_graph_wires_pass_and_a_removed_forgotten_one_no_longer_fails(
    adapted: Path,
) -> None:
    for name in ("first", "summary", "forgotten"):
        write_node(adapted, name)
    config = langgraph_json(adapted.parent, "first", "summary")
    with pytest.raises(WiringError, match=r"declares \['forgotten'\]"):
        project_graph(config, "summary")
    (adapted / "nodes" / "forgotten.py").unlink()
    del sys.modules["adapted.nodes.forgotten"]
    config = langgraph_json(adapted.parent, "first", "summary")
    assert project_graph(config, "summary").graph_id == "summary"
    assert project_graph(config, None).graph_id == MAIN_GRAPH


def test_the_workflow_refuses_a_project_with_an_unwired_node_before_opening_a_thread(
    adapted: Path, settings: Settings
) -> None:
    for name in ("first", "forgotten"):
        write_node(adapted, name)
    config = langgraph_json(adapted.parent, "first")
    chosen = settings.model_copy(update={"graphs_config": config})
    with pytest.raises(WiringError, match=r"\['forgotten'\]"):
        Workflow(chosen)


def test_the_shipped_project_wires_every_node_it_declares() -> None:
    assert project_graph(Settings().graphs_config, None).graph_id == MAIN_GRAPH
