"""The project's graphs: the ``graphs`` of langgraph.json, each a wiring the app runs.

langgraph.json says once which graphs the project has: the dev server serves each, and the
CLI (``--graph``), ``Workflow(graph=...)`` and the server factory (``app/server/graph.py``)
look a graph up here by the same id. The main graph's entry names the server factory,
``make_graph``, and runs ``graphs.WIRING``; another graph's entry names its wiring beside
the server's path, whose attribute is the graph's id (``app/server/graph.py`` makes each
graph's factory by that name)::

    "summarise": {"path": "./app/server/graph.py:summarise",
                  "wiring": "graphs.summarise:WIRING"}

Every graph is built by ``graphs.build_graph`` from its wiring. A thread records the id of
the graph it runs in its checkpoints' metadata (``graph_id``, as the dev server records
it), so a thread is resumed and read with the graph that made it.

Knowing every graph, this is also where a node no graph runs is found: a node module
added to a ``nodes`` package and left out of every wiring (``check_every_node_wired``).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from app.errors import UnknownGraph
from graphs import WIRING, Wiring
from graphs.declare import NodeSpec
from graphs.errors import WiringError

MAIN_GRAPH = "handoff"
"""The graph a thread that records none runs, and the one run when none is named."""

WIRING_KEY = "wiring"
"""The key of a langgraph.json graph entry naming its wiring, ``module:attribute``."""
NODE_PACKAGE = "nodes"
"""A package of this name holds one node module per node (``graphs/nodes/``)."""


@dataclass(frozen=True)
class ProjectGraph:
    """One graph of langgraph.json: its id, and where its wiring is (None: ``graphs.WIRING``)."""

    graph_id: str
    wiring_at: str | None

    def wiring(self) -> Wiring:
        """The graph's (node, route) pairs, imported from where its entry says."""
        if self.wiring_at is None:
            return WIRING
        module, _, attribute = self.wiring_at.partition(":")
        found: Any = getattr(importlib.import_module(module), attribute, None)
        if not isinstance(found, tuple) or not all(
            isinstance(entry, tuple) and entry and isinstance(entry[0], NodeSpec) for entry in found
        ):
            raise UnknownGraph(
                f"graph {self.graph_id!r}: {self.wiring_at!r} is no wiring of (node, route) "
                'pairs; name one as "module:ATTRIBUTE" in langgraph.json\'s '
                f"{WIRING_KEY!r}"
            )
        return found


def project_graphs(config: Path) -> dict[str, ProjectGraph]:
    """Every graph ``config`` (a langgraph.json) declares, by id; the main one first."""
    resolved = config.resolve()
    changed = resolved.stat().st_mtime_ns if resolved.exists() else None
    return dict(_read(resolved, changed))


@cache
def _read(config: Path, changed: int | None) -> tuple[tuple[str, ProjectGraph], ...]:
    """The graphs of ``config`` as it was when last ``changed`` (its mtime)."""
    try:
        entries = json.loads(config.read_text(encoding="utf-8")).get("graphs", {})
    except FileNotFoundError:  # an installed copy without the project's files: the main one
        entries = {MAIN_GRAPH: None}
    found = {MAIN_GRAPH: ProjectGraph(MAIN_GRAPH, None)}
    for graph_id, entry in entries.items():
        wiring = entry.get(WIRING_KEY) if isinstance(entry, dict) else None
        if graph_id != MAIN_GRAPH and wiring is None:
            raise UnknownGraph(
                f"graph {graph_id!r} of {config} names no wiring: give its entry "
                f'"{WIRING_KEY}": "module:ATTRIBUTE" (docs/adapt.md, A second graph)'
            )
        if graph_id != MAIN_GRAPH:
            found[graph_id] = ProjectGraph(graph_id, wiring)
    return tuple(found.items())


def project_graph(config: Path, graph_id: str | None) -> ProjectGraph:
    """The graph of that id (the main one for None), or UnknownGraph listing the ids.

    Every way in looks its graph up here, so each refuses a project with a node no graph
    runs (``check_every_node_wired``) before any thread is touched.
    """
    graphs = project_graphs(config)
    chosen = graphs.get(graph_id or MAIN_GRAPH)
    if chosen is None:
        raise UnknownGraph(f"no graph {graph_id!r} in {config}; graphs: {', '.join(graphs)}")
    resolved = config.resolve()
    _every_node_wired(resolved, resolved.stat().st_mtime_ns if resolved.exists() else None)
    return chosen


@cache
def _every_node_wired(config: Path, changed: int | None) -> None:
    """``check_every_node_wired`` once per process for ``config`` as last ``changed``."""
    check_every_node_wired([graph.wiring() for graph in dict(_read(config, changed)).values()])


def check_every_node_wired(wirings: list[Wiring]) -> None:
    """Every node a ``nodes`` package of the wired nodes declares runs in one of the graphs.

    A node module nothing wires is a node the project silently runs without: no router
    names it and no build would see it. LangGraph builds what it is given; the project's
    graphs (langgraph.json's) are all the wirings there are, so a node none of them wires
    is refused, naming it and the fix.
    """
    wired = {spec.name for wiring in wirings for spec, _ in wiring}
    parents = {spec.body.__module__.rpartition(".")[0] for wiring in wirings for spec, _ in wiring}
    for package in sorted(p for p in parents if p.rpartition(".")[2] == NODE_PACKAGE):
        unwired = sorted(spec.name for spec in declared_in(package) if spec.name not in wired)
        if unwired:
            raise WiringError(
                f"{package} declares {unwired}, which no graph of langgraph.json wires: the "
                "project would run without them; add (node, router) to the wiring and name "
                "it in the Literal return type of the router that goes to it"
            )


def declared_in(package: str) -> list[NodeSpec]:
    """Every node declared by a module of ``package`` (each module imported)."""
    found: list[NodeSpec] = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        module = importlib.import_module(f"{package}.{info.name}")
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, NodeSpec) and value.body.__module__ == module.__name__
        ]
    return found
