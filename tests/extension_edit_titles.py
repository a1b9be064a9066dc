"""The pause of docs/adapt.md ("Add a pause"), loaded from the page itself.

The node module is the page's ``graphs/nodes/edit_titles.py`` block, imported from a file
as written, and the wiring is the project's with the page's change: a new draft goes to
``edit_titles`` where it went on to review (the Writer's route, as shipped:
``tests.placing``), and the pause has its own router. The project's graph stays as it is.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from graphs import WIRING, Wiring
from graphs.routing import STOP, stopped
from tests.docs.snippets import ROOT, all_snippets
from tests.placing import with_extension

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


def route_after_edit_titles(state: Mapping[str, Any]) -> Literal["reviewer", "__end__"]:
    """Kept or renamed, the draft goes to review."""
    return STOP if stopped(state) else "reviewer"


def wiring_with(module: types.ModuleType) -> Wiring:
    """The project's wiring with the page's pause before review."""
    return with_extension(WIRING, (module.edit_titles, route_after_edit_titles))
