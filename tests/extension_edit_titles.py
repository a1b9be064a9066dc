"""The pause of docs/adapt.md ("Add a pause"), loaded from the page itself.

The node module is the page's ``graphs/nodes/edit_titles.py`` block, imported from a file
as written, and the wiring is the shipped one with the page's change: the Writer routes to
``edit_titles`` where it routed to ``reviewer``, and the pause has its own router. The
shipped graph stays as it is.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from graphs import WIRING, Wiring
from graphs.graph import WriterStale, route_after_writer
from graphs.nodes.writer import writer
from graphs.routing import STOP, stopped
from tests.docs.snippets import ROOT, all_snippets

PAGE = ROOT / "docs" / "adapt.md"
NODE_FILE = "graphs/nodes/edit_titles.py"


def page_source() -> str:
    """The node module exactly as the page writes it."""
    [block] = [
        snippet
        for snippet in all_snippets()
        if snippet.document == PAGE and snippet.options.get("file") == NODE_FILE
    ]
    return block.text


def load(folder: Path, name: str, source: str | None = None) -> types.ModuleType:
    """Import ``source`` (the page's module by default) as module ``name`` from a file."""
    path = folder / f"{name}.py"
    path.write_text(page_source() if source is None else source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic and the checkpoint reader look classes up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def route_after_writer_to_titles(
    state: Mapping[str, Any],
) -> WriterStale | Literal["edit_titles", "conclude", "__end__"]:
    """The page's ``route_after_writer``: a draft goes to the pause, not straight to review."""
    target = route_after_writer(state)
    return "edit_titles" if target == "reviewer" else cast(Any, target)


def route_after_edit_titles(state: Mapping[str, Any]) -> Literal["reviewer", "__end__"]:
    """Kept or renamed, the draft goes to review."""
    return STOP if stopped(state) else "reviewer"


def wiring_with(module: types.ModuleType) -> Wiring:
    """The shipped wiring with the page's pause after the Writer."""
    pairs: list[Any] = []
    for spec, route in WIRING:
        if spec is writer:
            pairs += [
                (writer, route_after_writer_to_titles),
                (module.edit_titles, route_after_edit_titles),
            ]
        else:
            pairs.append((spec, route))
    return tuple(pairs)
