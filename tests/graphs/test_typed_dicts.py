"""No module takes ``TypedDict`` from ``typing``: pydantic refuses it before Python 3.12.

The dev server gives LangGraph Studio the graph's input and output as JSON Schemas, which
LangGraph has pydantic build from the graph's TypedDicts. On Python 3.11 a ``typing``
TypedDict fails there ("Please use typing_extensions.TypedDict"), the server logs it and
sends no schema, and Studio has no input form. ``typing_extensions.TypedDict`` works on
every Python the project supports, so it is the one used everywhere, node reads and
writes included: any of them may end up in a schema.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("app", "bench", "contracts", "evals", "examples", "graphs", "tests")
NOT_YET: dict[str, str] = {}
"""Modules still taking ``typing``'s TypedDict, each with why it does no harm for now; the
test fails as soon as one no longer does, so the entry goes with its last use."""


def typing_typed_dicts(path: Path) -> list[int]:
    """The lines of ``path`` that take TypedDict from ``typing`` (imported or dotted)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "typing"
            and any(alias.name == "TypedDict" for alias in node.names)
        )
        or (
            isinstance(node, ast.Attribute)
            and node.attr == "TypedDict"
            and isinstance(node.value, ast.Name)
            and node.value.id == "typing"
        )
    )


def test_no_module_takes_typed_dict_from_typing() -> None:
    found = {
        path.relative_to(ROOT).as_posix(): lines
        for source in SOURCES
        for path in sorted((ROOT / source).rglob("*.py"))
        if (lines := typing_typed_dicts(path))
    }
    offenders = [
        f"{name}:{line}" for name, lines in found.items() if name not in NOT_YET for line in lines
    ]
    assert not offenders, (
        "use `from typing_extensions import TypedDict` (pydantic refuses typing's before "
        f"Python 3.12, and LangGraph Studio then gets no input schema): {offenders}"
    )
    assert set(NOT_YET) <= set(found), f"no longer needed in NOT_YET: {set(NOT_YET) - set(found)}"


def test_the_check_sees_both_spellings(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "import typing\nfrom typing import Any, TypedDict\n"
        "from typing_extensions import TypedDict as Fine\n"
        "class A(typing.TypedDict):\n    a: int\n",
        encoding="utf-8",
    )
    assert typing_typed_dicts(module) == [2, 4]
