"""Markdown facts the graph itself needs: which claims a body cites, how long it is."""

from __future__ import annotations

import re

CITATION = re.compile(r"\[(claim-[0-9]+)\]")
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)


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
