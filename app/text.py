"""Text primitives shared by the offline agents: sentences with offsets, terms, citations."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from graphs.markdown import CITATION, CJK, WORD, word_count

FULL_STOPS = "。！？．"
"""Sentence ends in Chinese and Japanese: no space follows them."""
_CLOSERS = "」』）〕】”’"
_SENTENCE = re.compile(
    rf"\S.*?(?:[.!?](?=[\"')\]]*(?:\s|$))|[{FULL_STOPS}][{_CLOSERS}]*)", re.DOTALL
)
_WORD = WORD
CJK_RUN = re.compile(rf"[{CJK}]+")
"""A run of Chinese or Japanese characters."""
_CJK_RUN = CJK_RUN
_CITATION_GROUP = re.compile(r"\s*(?:\[claim-[0-9]+\]\s*)+")
_CJK_MARKS = "、，：；「『（"
_SPACE_IN_CJK = re.compile(
    rf"(?<=[{CJK}{FULL_STOPS}{_CLOSERS}{_CJK_MARKS}])\s+(?=[{CJK}{FULL_STOPS}{_CLOSERS}{_CJK_MARKS}])"
)
_ENDING = re.compile(rf"(?:[.!?]|[{FULL_STOPS}][{_CLOSERS}]*)$")

__all__ = [
    "CITATION",
    "Sentence",
    "cite",
    "headings",
    "join_sentences",
    "normalize_space",
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
    """Lower-cased content words, stopwords removed; the unit of matching and ranking.

    Chinese and Japanese runs become overlapping character pairs (a run of one character
    stays itself): with no spaces to find words by, pairs are what search engines index
    for these scripts, and one character alone matches far too much.
    """
    latin = _CJK_RUN.sub(" ", text)
    words = (match.group(0).lower().replace("’", "'") for match in _WORD.finditer(latin))
    found = [word for word in words if word not in STOPWORDS and len(word) > 1]
    return found + [pair for run in _CJK_RUN.findall(text) for pair in _pairs(run)]


def _pairs(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def normalize_space(text: str) -> str:
    """One space between words, none between Chinese or Japanese characters.

    Line breaks inside a CJK sentence are not word breaks; turning them into spaces (as
    for Latin text) would put stray spaces inside the quoted sentence.
    """
    return _SPACE_IN_CJK.sub("", " ".join(text.split()))


def strip_citations(text: str) -> str:
    """A sentence without its [claim-N] markers."""
    spaced = _CITATION_GROUP.sub(" ", text)
    return normalize_space(re.sub(rf"\s+([.!?{FULL_STOPS}])", r"\1", spaced)).strip()


def cite(claim: str, claim_id: str) -> str:
    """The claim as a sentence ending in its citation marker, before its final stop.

    ``It rained [claim-3].`` in Latin text; ``下雨了[claim-3]。`` in Chinese and Japanese,
    where the marker sits before the full-width stop with no space and no extra period.
    A claim without a stop gets one in its own script.
    """
    text = strip_citations(claim)
    ending = _ENDING.search(text)
    if ending is None:
        last_is_cjk = bool(text) and _CJK_RUN.fullmatch(text[-1]) is not None
        return f"{text}[{claim_id}]。" if last_is_cjk else f"{text} [{claim_id}]."
    body, end = text[: ending.start()], ending.group(0)
    if end[0] in FULL_STOPS:
        return f"{body}[{claim_id}]{end}"
    return f"{body} [{claim_id}]{end}"


def join_sentences(parts: list[str]) -> str:
    """Sentences as one paragraph: a space after a Latin stop, none after a full-width one."""
    text = ""
    for part in parts:
        if text and not text.endswith(tuple(FULL_STOPS + _CLOSERS)):
            text += " "
        text += part
    return text


def headings(markdown: str) -> list[str]:
    """Second-level section titles of a markdown article."""
    return [line[3:].strip() for line in markdown.splitlines() if line.startswith("## ")]


def title_of(text: str, fallback: str) -> str:
    """The first top-level heading, else the fallback."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()[:300] or fallback
    return fallback
