"""The README's layout map matches the tree: every folder of code is on it, nothing on it is
gone, and the things a newcomer looks for first are each one line away."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
LOOKED_FOR = (
    "contract",
    "node",
    "route",
    "pause",
    "artifact store",
    "ledger",
    "lock",
    "settings",
    "Python API",
    "CLI",
    "server",
    "fleet",
)
"""What a newcomer asks for first (the issue that asked for the map names them)."""


def layout() -> dict[str, str]:
    """Each path the README's layout block names → what it says of it.

    A line is ``path  description``; an indented path is inside the nearest folder above
    it with less indentation.
    """
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```text\n(.*?)```", section, flags=re.S)
    assert block, "the Layout section has no text block"
    entries: dict[str, str] = {}
    parents: list[tuple[int, str]] = []
    for line in block[1].splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        name, _, description = line.strip().partition("  ")
        while parents and parents[-1][0] >= indent:
            parents.pop()
        path = (parents[-1][1] if parents else "") + name
        entries[path] = description.strip()
        if name.endswith("/"):
            parents.append((indent, path))
    return entries


def test_every_path_on_the_map_is_in_the_tree_and_described() -> None:
    entries = layout()
    missing = sorted(path for path in entries if not (ROOT / path).exists())
    assert missing == [], f"the README's layout names paths that are not there: {missing}"
    bare = sorted(path for path, description in entries.items() if not description)
    assert bare == [], f"say what these are: {bare}"


def test_every_package_is_on_the_map() -> None:
    packages = {
        f"{init.parent.relative_to(ROOT).as_posix()}/"
        for root in ("contracts", "graphs", "app")
        for init in (ROOT / root).rglob("__init__.py")
    }
    absent = sorted(packages - set(layout()))
    assert absent == [], f"the README's layout leaves out the packages {absent}"


@pytest.mark.e2e
def test_every_top_level_entry_git_tracks_is_on_the_map() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    top = {path.split("/")[0] + ("/" if "/" in path else "") for path in tracked}
    top = {entry for entry in top if not entry.startswith(".") or entry == ".env.example"}
    top.discard("README.md")
    absent = sorted(top - set(layout()))
    assert absent == [], f"the README's layout leaves out {absent}"


def test_what_a_newcomer_looks_for_is_one_line_away() -> None:
    descriptions = " ".join(layout().values())
    unfound = [thing for thing in LOOKED_FOR if thing not in descriptions]
    assert unfound == [], f"no line of the layout says where to find {unfound}"
