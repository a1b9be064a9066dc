"""Whether a sentence stands alone as a fact, or is a fragment a reader cannot use.

"No." alone, "For more, see UUID.", "In version 2 this was required to serialize …" without
what "this" is: each is true where it stands in its document and says nothing lifted out
of it. Research makes no fact of a fragment, and the Reviewer requests ``FRAGMENT`` for a
cited fact that is one (a model's claim may be, whatever its quote):

- a sentence of fewer than ``MIN_FACT_WORDS`` words;
- a pointer elsewhere ("For more, see …", "See also …", "Read more about …");
- a sentence that leans on the one before it (``app/text/antecedents.py``), unless it is
  cited after that sentence (its fact's ``leans_on``).
"""

from __future__ import annotations

import re

from app.text.antecedents import leans_on_earlier
from app.text.primitives import word_count

MIN_FACT_WORDS = 4
"""Fewer words than this make no statement a reader can use on its own."""
_POINTER = re.compile(
    r"\W*(?:(?:for|to\s+learn)\s+(?:more|details|further\s+\w+|the\s+full\s+\w+)\b[^.]*\bsee\b"
    r"|see\s+(?:also\s+)?\S|read\s+more\b|more\s+(?:on|about)\s+\S+\s+(?:in|at)\b)",
    re.IGNORECASE,
)


def fragment(sentence: str, *, after_antecedent: bool = False) -> str | None:
    """Why ``sentence`` is no fact on its own, or None when it stands alone."""
    if word_count(sentence) < MIN_FACT_WORDS:
        return f"fewer than {MIN_FACT_WORDS} words"
    if _POINTER.match(sentence):
        return "it points elsewhere instead of saying something"
    if not after_antecedent and leans_on_earlier(sentence):
        return "it refers back to a sentence it is not cited with"
    return None
