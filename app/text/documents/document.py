"""What a read document holds: its blocks by kind, its prose sentences, its line index.

A quote is checked against the source bytes, so every block and sentence keeps the exact
span it was read from; ``block_at`` says what kind of text a quoted span is.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Literal

from app.text.documents.lines import line_bounds, line_span

BlockKind = Literal["heading", "paragraph", "list_item", "quote", "code", "table", "html", "media"]
PROSE_KINDS: frozenset[BlockKind] = frozenset({"paragraph", "list_item", "quote"})
"""The kinds whose sentences are quotable prose."""

MARKDOWN = "text/markdown"
PLAIN = "text/plain"
RST = "text/x-rst"
HTML = "text/html"


@dataclass(frozen=True, slots=True)
class Block:
    """One leaf block of a document; containers (lists, quotes) only give it its kind."""

    kind: BlockKind
    start: int
    end: int
    first_line: int
    last_line: int
    section: tuple[str, ...]
    media_type: str | None = None

    @property
    def prose(self) -> bool:
        """Whether its sentences may be quoted as prose."""
        return self.kind in PROSE_KINDS


@dataclass(frozen=True, slots=True)
class ProseSentence:
    """A prose sentence: the exact source span, and what a reader sees of it."""

    text: str
    plain: str
    start: int
    end: int
    index: int
    block: int
    position: int
    section: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Document:
    """A text read once: its blocks, its prose sentences, and a line index for provenance."""

    text: str
    title: str | None
    blocks: tuple[Block, ...]
    sentences: tuple[ProseSentence, ...]
    _line_starts: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _block_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._line_starts:
            object.__setattr__(self, "_line_starts", tuple(line_bounds(self.text)[0]))
        object.__setattr__(self, "_block_starts", tuple(block.start for block in self.blocks))

    def block_at(self, start: int, end: int) -> Block | None:
        """The block containing [start, end), so a quote can say what kind of text it is."""
        self._check(start, end)
        index = bisect_right(self._block_starts, start) - 1
        if index >= 0 and end <= self.blocks[index].end:
            return self.blocks[index]
        return None

    def lines_of(self, start: int, end: int) -> tuple[int, int]:
        """1-based first and last line of a span, counting line breaks as markdown-it does."""
        self._check(start, end)
        return line_span(self._line_starts, start, end)

    def _check(self, start: int, end: int) -> None:
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(f"span [{start}, {end}) is not inside a text of {len(self.text)}")
