"""The docs show the graph build_graph builds: the full drawing, and the README's sketch."""

from __future__ import annotations

import re

from graphs.diagram import PAGE, block, drawn, node_names
from tests.docs.snippets import ROOT
from tests.extension_side_by_side import WIRING_SIDE_BY_SIDE


def test_the_graph_page_draws_the_compiled_graph() -> None:
    shown = drawn(PAGE.read_text(encoding="utf-8"))
    assert shown is not None, "docs/graph.md lost its graph markers"
    assert shown == block(), "docs/graph.md shows another graph: run `python -m graphs.diagram`"


def test_a_node_added_to_the_wiring_is_missing_from_the_drawing_until_redrawn() -> None:
    extended = block(WIRING_SIDE_BY_SIDE)
    assert "measure_draft" in extended and "join_checks" in extended
    assert extended != drawn(PAGE.read_text(encoding="utf-8"))


def sketch() -> str:
    """The README's text diagram (its first text block)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("```text\n", 1)[1].split("```", 1)[0]


def test_the_readme_sketch_names_no_node_the_graph_does_not_have() -> None:
    """A sketch: a node added to the wiring need not be drawn there (docs/graph.md draws
    every node), but a node named there that the graph no longer has is a wrong picture."""
    words = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", sketch()))
    assert words, "the README's sketch names no node"
    assert words <= node_names(), f"not nodes: {sorted(words - node_names())}"
