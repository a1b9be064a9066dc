"""The picture of the workflow in docs/graph.md, drawn from the compiled graph itself.

``python -m graphs.diagram`` rewrites the block between the page's ``graph`` markers;
``tests/docs/test_graph_diagram.py`` fails while the page shows another graph than the one
``build_graph`` builds, so a node added to the wiring is never missing from it (and while
the README's sketch names a node the graph no longer has).
"""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.runnables.graph import Graph
from langgraph.graph import START

from graphs.entry import entry_router
from graphs.graph import WIRING, build_graph, routed
from graphs.wiring import Wiring, targets

BEGIN = "<!-- graph: drawn by `python -m graphs.diagram` from build_graph(); do not edit -->"
END = "<!-- graph: end -->"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "graph.md"


def node_names(wiring: Wiring | None = None) -> set[str]:
    """The nodes of the compiled graph (without LangGraph's start and end)."""
    builder = build_graph() if wiring is None else build_graph(wiring=wiring)
    return set(builder.nodes)


def drawn_graph(wiring: Wiring | None = None) -> Graph:
    """The compiled graph as LangGraph draws it, with only the edges a router names.

    LangGraph finds a drawing's edges by simulating steps, and gives a deferred node (a
    join) an edge from every node of the step before it runs, whatever their routers
    say; those edges are no route a run can take, so they are left out.
    """
    chosen = WIRING if wiring is None else wiring
    graph = build_graph(wiring=chosen).compile().get_graph()
    built = routed(chosen)
    named = {(spec.name, target) for spec, route in built for target in targets(route)}
    named |= {(START, target) for target in targets(entry_router(built))}
    graph.edges = [edge for edge in graph.edges if (edge.source, edge.target) in named]
    return graph


def mermaid(wiring: Wiring | None = None) -> str:
    """The compiled graph as a Mermaid flowchart (every node, every route a router names)."""
    return drawn_graph(wiring).draw_mermaid()


def block(wiring: Wiring | None = None) -> str:
    """The page's block: the markers around the Mermaid code block."""
    return f"{BEGIN}\n```mermaid\n{mermaid(wiring).rstrip()}\n```\n{END}"


def drawn(readme: str) -> str | None:
    """The block the page holds now, or None when it has no markers."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        return None
    return readme[start : end + len(END)]


def main() -> None:
    """Redraw the page's block in place."""
    page = PAGE.read_text(encoding="utf-8")
    current = drawn(page)
    if current is None:
        sys.exit(f"{PAGE.name} has no {BEGIN!r} … {END!r} markers to draw between")
    PAGE.write_text(page.replace(current, block()), encoding="utf-8")


if __name__ == "__main__":
    main()
