"""The Workflow is one class composed of services: no inheritance chain, no import circle.

A reader follows ``workflow.run`` into one service and back, never up a chain of base
classes; the package's modules point one way, type-only imports included.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import app.workflow
from app.workflow import Workflow

PACKAGE = Path(app.workflow.__file__).parent
MODULES = {f"app.workflow.{path.stem}": path for path in PACKAGE.glob("*.py")}
MODULES.pop("app.workflow.__init__")


def _imported(path: Path) -> set[str]:
    """The app.workflow modules a file imports, ``TYPE_CHECKING`` ones and lazy ones too."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names & MODULES.keys()


def test_the_workflow_is_one_class_with_no_base_but_object() -> None:
    assert Workflow.__mro__ == (Workflow, object)


def test_app_workflow_modules_import_no_circle_even_counting_type_only_imports() -> None:
    graph = {module: _imported(path) for module, path in MODULES.items()}
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as circle:
        raise AssertionError(f"import circle: {' -> '.join(circle.args[1])}") from None
