"""Markdown facts the graph itself needs: which claims a body cites, how long it is."""

from __future__ import annotations

import re

CITATION = re.compile(r"\[(claim-[0-9]+)\]")
CJK = "\u3005\u3041-\u3096\u30a1-\u30fa\u30fc\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Kana and Han ideographs: scripts written without spaces between words."""
WORD = re.compile(rf"[{CJK}]|[^\W_{CJK}]+(?:['’][^\W_{CJK}]+)?", re.UNICODE)
"""A word: a run of letters or digits, or one kana or Han character.

Chinese and Japanese put no spaces between words, so a whole run would count as one
"word" and a word limit would mean nothing; one character per word is how word counters
for these languages count (a Chinese word averages under two characters).
"""


def cited_claims(markdown: str) -> list[str]:
    """Claim ids cited in a body, in first-seen order."""
    seen: list[str] = []
    for claim_id in CITATION.findall(markdown):
        if claim_id not in seen:
            seen.append(claim_id)
    return seen


SOURCES_HEADING = "Sources"
"""The article's closing list of the sources it cites."""
OPEN_QUESTIONS_HEADING = "Open questions"
"""The article's list of the task's questions the corpus does not answer."""
APPARATUS = (OPEN_QUESTIONS_HEADING, SOURCES_HEADING)
"""Sections that are the article's apparatus, not its text: their words are not counted
(a reference list does not eat the word limit) and their lines are not claims."""


def apparatus_heading(line: str) -> bool:
    """Whether a line is the ``##`` heading of an apparatus section."""
    return line.startswith("## ") and line[3:].strip().casefold() in _APPARATUS_KEYS


_APPARATUS_KEYS = frozenset(title.casefold() for title in APPARATUS)


def word_count(markdown: str) -> int:
    """Words of an article's text: no headings, citation markers or apparatus sections.

    Writers and the Reviewer count with this one function, so a draft the writer fitted
    to the limit is the length the Reviewer measures.
    """
    total = 0
    inside_apparatus = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("#"):
            inside_apparatus = apparatus_heading(line)
            continue
        if not inside_apparatus:
            total += len(WORD.findall(CITATION.sub(" ", line)))
    return total
