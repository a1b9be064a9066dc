"""The fenced blocks of the README and docs/, with what each one's info string asks for.

A block's info string is its language and then attributes: words (``ci``, ``project``,
``serve``, ``postgres``, ``adapted``, ``server``, ``a2a``) or ``key=value`` (``file=PATH``). Each
language and attribute has one meaning, which ``tests/docs/test_snippets.py`` carries out; anything
else is refused, so a block can never be left out of the tests by a typo.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

ATTRIBUTES: dict[str, frozenset[str]] = {
    "text": frozenset(),  # not code: diagrams, synopses, layouts; `handoff` lines are checked
    "bash": frozenset({"ci", "serve", "postgres", "adapted", "project", "a2a"}),
    "python": frozenset({"server", "file", "postgres", "a2a"}),
    "diff": frozenset(),
    "dotenv": frozenset(),
    "mermaid": frozenset(),  # drawn from the graph (graphs/diagram.py), checked against it
}
"""Languages a block may have, with the attributes each accepts."""

_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>.*)$")


class SnippetError(ValueError):
    """A block whose info string the tests cannot carry out."""


@dataclass(frozen=True)
class Snippet:
    """One fenced block: where it is, its language and attributes, and its text."""

    document: Path
    line: int
    language: str
    words: frozenset[str] = field(default_factory=frozenset)
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""
    section: str = ""
    """The title of the ``## `` section the block is in ("" before the first one)."""

    @property
    def id(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    def has(self, word: str) -> bool:
        return word in self.words


def parse_info(info: str, where: str) -> tuple[str, frozenset[str], dict[str, str]]:
    """Language, words and options of an info string, or SnippetError naming the problem."""
    parts = info.split()
    if not parts:
        raise SnippetError(f"{where}: a fenced block needs a language, one of {sorted(ATTRIBUTES)}")
    language, rest = parts[0], parts[1:]
    if language not in ATTRIBUTES:
        raise SnippetError(f"{where}: unknown language {language!r}; use {sorted(ATTRIBUTES)}")
    words: set[str] = set()
    options: dict[str, str] = {}
    for part in rest:
        key, _, value = part.partition("=")
        if key not in ATTRIBUTES[language]:
            raise SnippetError(f"{where}: {language} blocks take no {key!r}")
        if value:
            options[key] = value
        else:
            words.add(key)
    return language, frozenset(words), options


def snippets(document: Path) -> list[Snippet]:
    """Every fenced block of one document, in order."""
    found: list[Snippet] = []
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    section = ""
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            if lines[index].startswith("## "):
                section = lines[index].removeprefix("## ").strip()
            index += 1
            continue
        where = f"{document.relative_to(ROOT)}:{index + 1}"
        language, words, options = parse_info(match["info"], where)
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index].removeprefix(match["indent"]))
            index += 1
        if index == len(lines):
            raise SnippetError(f"{where}: the block is never closed")
        found.append(
            Snippet(
                document,
                int(where.rsplit(":", 1)[1]),
                language,
                words,
                options,
                "\n".join(body) + "\n",
                section,
            )
        )
        index += 1
    return found


def all_snippets() -> list[Snippet]:
    """Every fenced block of the README and docs/."""
    return [snippet for document in DOCUMENTS for snippet in snippets(document)]


def section_prose(document: Path, title: str) -> str:
    """The text of one ``## `` section outside its fenced blocks."""
    kept: list[str] = []
    inside = fenced = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line.removeprefix("## ").strip() == title
            continue
        if _FENCE.match(line) or (fenced and line.strip() == "```"):
            fenced = not fenced
            continue
        if inside and not fenced:
            kept.append(line)
    return "\n".join(kept)


def touched(blocks: list[Snippet]) -> tuple[set[str], int]:
    """The files a walk-through's blocks change, and its places: each new file is one, and
    so is each run of consecutive changed lines in a diff."""
    files: set[str] = set()
    places = 0
    for block in blocks:
        if "file" in block.options:
            files.add(block.options["file"])
            places += 1
        if block.language != "diff":
            continue
        changing = False
        for line in block.text.splitlines():
            if line.startswith("+++ "):
                files.add(line.removeprefix("+++ ").removeprefix("b/").strip())
                continue
            if line.startswith("--- "):
                continue
            now = line[:1] in ("+", "-")
            places += now and not changing
            changing = now
    return files, places
