"""The draft's markdown as every writer hands it on: its text made safe, then its apparatus.

The published article is the approved draft, byte for byte, so this is where the words a
reader is shown are made: a corpus sentence, a model's prose or an objective holding a
``javascript:`` link or an escape sequence is made safe here (``app/text/publishable.py``),
before the Reviewer reads it. The Open questions and Sources are built from the contracts
already safe (``app/agents/apparatus.py``); the claims cited are read from the safe text.
"""

from __future__ import annotations

from app.agents.apparatus import apparatus
from app.text.publishable import publishable
from contracts import Question, ResearchBundle
from graphs.markdown import cited_claims


def draft_markdown(
    text: str, bundle: ResearchBundle, still_open: list[Question]
) -> tuple[str, list[str]]:
    """The draft's body (safe text, then its apparatus) and the claims it cites, in order."""
    safe = publishable(text)
    cited = cited_claims(safe)
    closing = apparatus(bundle, still_open, cited)
    return (safe + "\n" + closing if closing else safe), cited
