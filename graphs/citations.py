"""Whether a cited claim is what its source says, at the bytes research recorded.

One rule, used by the Reviewer when it checks a draft and by finalize when it proves,
before publishing, that the approved draft's claims still hold.
"""

from __future__ import annotations

from contracts import Fact, Source


def quote_problem(fact: Fact, source: Source, text: str) -> str | None:
    """Why the fact's quote, or its code example, is not verbatim in the snapshot's text."""
    if source.snapshot.sha256 != source.sha256:
        return f"snapshot of {source.id} is not the content research read"
    if text[fact.span.start : fact.span.end] != fact.quote:
        return (
            f"quote of {fact.id} is not found verbatim in {source.id} at "
            f"{fact.span.start}-{fact.span.end}"
        )
    example = fact.example
    if example is not None and text[example.span.start : example.span.end] != example.text:
        return (
            f"code example of {fact.id} is not found verbatim in {source.id} at "
            f"{example.span.start}-{example.span.end}"
        )
    return None
