"""Text primitives shared by the offline agents: sentences with offsets, terms, citations."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from graphs.markdown import CITATION, WORD, word_count

_SENTENCE = re.compile(r"\S.*?[.!?](?=[\"')\]]*(?:\s|$))", re.DOTALL)
_WORD = WORD
_CITATION_GROUP = re.compile(r"\s*(?:\[claim-[0-9]+\]\s*)+")

__all__ = [
    "CITATION",
    "Sentence",
    "headings",
    "sentences",
    "strip_citations",
    "terms",
    "title_of",
    "word_count",
]

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    explain few for from further had has have having he her here hers him his how i if in
    into is it its itself just me more most my no nor not of off on once only or other our
    out over own same she should so some such than that the their them then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your describe tell show led lead""".split()
)


@dataclass(frozen=True)
class Sentence:
    """A sentence and where it sits in its text (character offsets, end exclusive)."""

    text: str
    start: int
    end: int
    index: int


def _blocks(text: str) -> Iterator[tuple[int, int]]:
    """Paragraph blocks (start, end), split at blank lines and at markdown headings."""
    start: int | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            if start is not None:
                yield start, offset
                start = None
        elif start is None:
            start = offset
        offset += len(line)
    if start is not None:
        yield start, offset


def sentences(text: str) -> list[Sentence]:
    """Prose sentences of a markdown text, headings excluded, with exact offsets.

    Trailing text without end punctuation still counts as a sentence, so nothing in a
    draft escapes the reviewer's checks by omitting a full stop.
    """
    found: list[Sentence] = []
    for block_start, block_end in _blocks(text):
        block = text[block_start:block_end]
        consumed = 0
        for match in _SENTENCE.finditer(block):
            start = block_start + match.start()
            end = block_start + match.end()
            found.append(Sentence(text=text[start:end], start=start, end=end, index=len(found)))
            consumed = match.end()
        rest = block[consumed:]
        if rest.strip():
            start = block_start + consumed + (len(rest) - len(rest.lstrip()))
            end = block_start + consumed + len(rest.rstrip())
            found.append(Sentence(text=text[start:end], start=start, end=end, index=len(found)))
    return found


def terms(text: str) -> list[str]:
    """Lower-cased content words, stopwords removed; the unit of matching and ranking."""
    words = (match.group(0).lower().replace("’", "'") for match in _WORD.finditer(text))
    return [word for word in words if word not in STOPWORDS and len(word) > 1]


def strip_citations(text: str) -> str:
    """A sentence without its [claim-N] markers."""
    return re.sub(r"\s+([.!?])", r"\1", _CITATION_GROUP.sub(" ", text)).strip()


def headings(markdown: str) -> list[str]:
    """Second-level section titles of a markdown article."""
    return [line[3:].strip() for line in markdown.splitlines() if line.startswith("## ")]


def title_of(text: str, fallback: str) -> str:
    """The first top-level heading, else the fallback."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()[:300] or fallback
    return fallback
