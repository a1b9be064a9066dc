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


def word_count(markdown: str) -> int:
    """Words of an article body, not counting headings or citation markers."""
    total = 0
    for line in markdown.splitlines():
        if line.lstrip().startswith("#"):
            continue
        total += len(WORD.findall(CITATION.sub(" ", line)))
    return total
