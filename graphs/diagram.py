"""The picture of the workflow in docs/graph.md, drawn from the compiled graph itself.

``python -m graphs.diagram`` rewrites the block between the page's ``graph`` markers;
``tests/docs/test_graph_diagram.py`` fails while the page (or the README's sketch, which
must name every node) shows another graph than the one ``build_graph`` builds, so a node
added to the wiring is never missing from either.
"""

from __future__ import annotations

import sys
from pathlib import Path

from graphs.graph import build_graph
from graphs.wiring import Wiring

BEGIN = "<!-- graph: drawn by `python -m graphs.diagram` from build_graph(); do not edit -->"
END = "<!-- graph: end -->"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "graph.md"


def node_names(wiring: Wiring | None = None) -> set[str]:
    """The nodes of the compiled graph (without LangGraph's start and end)."""
    builder = build_graph() if wiring is None else build_graph(wiring=wiring)
    return set(builder.nodes)


def mermaid(wiring: Wiring | None = None) -> str:
    """The compiled graph as a Mermaid flowchart (every node, every route a router names)."""
    builder = build_graph() if wiring is None else build_graph(wiring=wiring)
    return builder.compile().get_graph().draw_mermaid()


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
