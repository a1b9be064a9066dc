"""The shape of the code: layers point one way and no module imports itself round a circle.

A module is sized by its concept, not by a line count: no length is checked here.

Imports are read from the source (``ast``), so the walk sees imports inside functions too
(a lazy import closes a circle as surely as a top-level one) and those under
``if TYPE_CHECKING:``: a circle a type checker needs is a circle a reader follows too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("contracts", "graphs", "app")
LAYERS = {"contracts": set(), "graphs": {"contracts"}, "app": {"contracts", "graphs"}}
"""Which of the project's packages each may import: contracts ← graphs ← app."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {
        module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
    }


def _imports(tree: ast.AST) -> Iterator[str]:
    """Every module an import statement names, wherever it stands."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        yield from _imports(node)


@cache
def imports() -> dict[str, frozenset[str]]:
    """Each project module → the project modules it imports (and their parent packages)."""
    known = modules()
    found: dict[str, frozenset[str]] = {}
    for name, path in known.items():
        targets: set[str] = set()
        for imported in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            while imported:
                if imported in known and imported != name and not name.startswith(imported + "."):
                    targets.add(imported)
                imported = imported.rpartition(".")[0]
        found[name] = frozenset(targets)
    return found


def circles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    graph = imports()
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_the_walk_sees_lazy_and_type_checking_imports() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import graphs.declare\n"
        "def later():\n    from app.settings import Settings\n"
    )
    assert set(_imports(tree)) == {
        "typing",
        "typing.TYPE_CHECKING",
        "graphs.declare",
        "app.settings",
        "app.settings.Settings",
    }


def test_no_module_imports_itself_round_a_circle() -> None:
    assert circles() == []


@pytest.mark.parametrize("package", PACKAGES)
def test_a_layer_imports_only_the_layers_below_it(package: str) -> None:
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in imports().items()
        if module.split(".")[0] == package
        for target in targets
        if target.split(".")[0] not in LAYERS[package] | {package}
    )
    assert upward == []


def test_contracts_import_nothing_but_pydantic_and_the_standard_library() -> None:
    import sys

    allowed = set(sys.stdlib_module_names) | {
        "pydantic",
        "pydantic_core",
        "typing_extensions",
        "contracts",
    }
    foreign = sorted(
        f"{name} imports {imported}"
        for name, path in modules().items()
        if name.split(".")[0] == "contracts"
        for imported in _imports(ast.parse(path.read_text(encoding="utf-8")))
        if imported.split(".")[0] not in allowed
    )
    assert foreign == []


def test_no_module_of_graphs_imports_a_python_source_parser() -> None:
    """Nodes and routers are known by their declarations and types, never by parsing code."""
    parsers = {"ast", "tokenize", "dis", "symtable"}
    found = sorted(
        f"{name} imports {imported}"
        for name, path in modules().items()
        if name.split(".")[0] == "graphs"
        for imported in _imports(ast.parse(path.read_text(encoding="utf-8")))
        if imported.split(".")[0] in parsers
    )
    assert found == []
