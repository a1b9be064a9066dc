"""Text primitives shared by the offline agents: terms, citations, spacing.

Sentences come from ``app/text/documents/`` (markdown-it-py and sentencex), never from here.
"""

from __future__ import annotations

import re

from graphs.markdown import CITATION, CJK, WORD, word_count

FULL_STOPS = "。！？．"
"""Sentence ends in Chinese and Japanese: no space follows them."""
_CLOSERS = "」』）〕】”’"
_WORD = WORD
CJK_RUN = re.compile(rf"[{CJK}]+")
"""A run of Chinese or Japanese characters."""
_CITATION_GROUP = re.compile(r"\s*(?:\[claim-[0-9]+\]\s*)+")
_CJK_MARKS = "、，：；「『（"
_SPACE_IN_CJK = re.compile(
    rf"(?<=[{CJK}{FULL_STOPS}{_CLOSERS}{_CJK_MARKS}])\s+(?=[{CJK}{FULL_STOPS}{_CLOSERS}{_CJK_MARKS}])"
)
_ENDING = re.compile(rf"(?:[.!?]|[{FULL_STOPS}][{_CLOSERS}]*)$")

__all__ = [
    "CITATION",
    "cite",
    "join_sentences",
    "normalize_space",
    "strip_citations",
    "terms",
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


def terms(text: str) -> list[str]:
    """Lower-cased content words, stopwords removed; the unit of matching and ranking.

    Chinese and Japanese runs become overlapping character pairs (a run of one character
    stays itself): with no spaces to find words by, pairs are what search engines index
    for these scripts, and one character alone matches far too much.
    """
    latin = CJK_RUN.sub(" ", text)
    words = (match.group(0).lower().replace("’", "'") for match in _WORD.finditer(latin))
    found = [word for word in words if word not in STOPWORDS and len(word) > 1]
    return found + [pair for run in CJK_RUN.findall(text) for pair in _pairs(run)]


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
        last_is_cjk = bool(text) and CJK_RUN.fullmatch(text[-1]) is not None
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
