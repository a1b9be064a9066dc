"""The draft's markdown as every writer hands it on: its text made safe, then its apparatus.

The published article is the approved draft, byte for byte, so this is where the words a
reader is shown are made: a corpus sentence, a model's prose or an objective holding a
``javascript:`` link or an escape sequence is made safe here (``app/text/publishable.py``),
before the Reviewer reads it. The Open questions and Sources are built from the contracts
already safe (``app/agents/apparatus.py``); the claims cited are read from the safe text.

A fact whose sentence introduces a code example (``Fact.example``) is shown with it: the
example follows, as a fenced block naming the claim in its info string, right after each
sentence that cites the fact, whichever writer wrote the sentence. The code is never a
sentence; the Reviewer checks it against the source as it checks a quote.
"""

from __future__ import annotations

import re

from app.agents.apparatus import apparatus
from app.text.documents import read_document
from app.text.primitives import CITATION
from app.text.publishable import publishable
from contracts import Fact, Question, ResearchBundle
from graphs.markdown import cited_claims

FENCE_LANGUAGES = {
    "text/x-python": "python",
    "text/x-shellscript": "sh",
    "application/x-bibtex": "bibtex",
}
"""The info-string language of an example's media type (any other: ``text``)."""
_BACKTICKS = re.compile(r"`+")


def draft_markdown(
    text: str, bundle: ResearchBundle, still_open: list[Question]
) -> tuple[str, list[str]]:
    """The draft's body (safe text, then its apparatus) and the claims it cites, in order."""
    safe = publishable(with_examples(text, bundle))
    cited = cited_claims(safe)
    closing = apparatus(bundle, still_open, cited)
    return (safe + "\n" + closing if closing else safe), cited


def fenced(fact: Fact) -> str:
    """The fact's code example as a fenced block, its claim named in the info string."""
    if fact.example is None:
        raise ValueError(f"{fact.id} has no code example to show")
    code = fact.example.shown
    fence = "`" * max(3, 1 + max(map(len, _BACKTICKS.findall(code)), default=0))
    language = FENCE_LANGUAGES.get(fact.example.media_type, "text")
    return f"{fence}{language} [{fact.id}]\n{code}\n{fence}"


def with_examples(text: str, bundle: ResearchBundle) -> str:
    """The text with each cited fact's example right after the sentence citing it.

    The sentence ends its paragraph there: what followed it in the paragraph goes on
    after the example. An example already there, as this function puts it, stays as it is.
    """
    article = read_document(text)
    for sentence in reversed(article.sentences):
        facts = [
            bundle.fact(claim_id) for claim_id in dict.fromkeys(CITATION.findall(sentence.text))
        ]
        blocks = "\n\n".join(fenced(fact) for fact in facts if fact and fact.example)
        rest = text[sentence.end :].lstrip(" \t\r\n")
        if blocks and not rest.startswith(blocks):
            text = text[: sentence.end] + "\n\n" + blocks + ("\n\n" + rest if rest else "\n")
    return text
