"""Passages: the prose sentences of the sources read, the unit research ranks and quotes.

Each passage keeps its sentence's exact span, its section path and line range (for
provenance), and whether it leans on the sentence before it (``app/text/antecedents.py``);
``Retrieval`` is what deterministic retrieval found, for the offline and model-backed
agents alike.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from annotated_types import MaxLen

from app.text.antecedents import leans_on_earlier
from app.text.documents import Document, ProseSentence, read_document
from app.text.documents.examples import example_after, introduces
from app.text.fragments import fragment
from app.text.key_terms import heading_keys, keys
from app.text.relevance import Rarity
from contracts import (
    CodeExample,
    ErrorDetail,
    Fact,
    LineRange,
    Question,
    Source,
    Span,
    ToolReceipt,
)

"""Fewer words than this is a label or a fragment, not a statement worth citing."""
MAX_QUOTE = next(
    rule.max_length for rule in Fact.model_fields["quote"].metadata if isinstance(rule, MaxLen)
)
"""The longest quote a fact holds: a sentence whose source, markup included (an HTML
sentence's links), is longer cannot be cited."""
MAX_EXAMPLE = next(
    rule.max_length
    for rule in CodeExample.model_fields["text"].metadata
    if isinstance(rule, MaxLen)
)
"""The longest code example a fact holds: a sentence introducing a longer one cannot be cited."""
_RUN_IN_HEADING = re.compile(r"(\*\*|__)[^*_]+?[.:]?\1[.:]?")
"""A sentence all in bold ("**Configuring runs per assistant.**"): a heading run into its
paragraph, a label rather than a statement."""


@dataclass(frozen=True)
class Passage:
    """A prose sentence of a source, the unit BM25 ranks, with what a reader needs of it."""

    source: Source
    sentence: ProseSentence
    terms: frozenset[str]
    """Key terms of the sentence itself."""
    headings: frozenset[str]
    """Key terms of its section path (not the document title)."""
    context: frozenset[str]
    """Its own key terms with those of its section path and document title."""
    first_line: int
    last_line: int
    leans: bool
    """It leans on the sentence before it in its paragraph (``app/text/antecedents.py``)."""
    has_example: bool = False
    """It introduces a code example it is cited with (``app/text/documents/examples.py``)."""

    @property
    def lines(self) -> LineRange:
        """Its line range in the source, made when a fact cites it (not for every passage)."""
        return LineRange(first=self.first_line, last=self.last_line)

    @property
    def usable(self) -> bool:
        """Whether it can be a fact: a statement, not a pronoun with nothing before it.

        A label, a lead-in to a list or a table, a question and a fragment
        (``app/text/fragments.py``) are no statements; a lead-in to a code example is one
        only with its example.
        """
        plain = self.sentence.plain
        if plain.endswith(("?", "？")):
            return False  # it asks: no statement to cite
        if fragment(plain, after_antecedent=True):  # too short, or a pointer elsewhere
            return False
        if plain.endswith((":", "：")) and not self.has_example:
            return False  # it introduces what follows, which cannot be cited with it
        if len(self.sentence.text) > MAX_QUOTE:
            return False
        if _RUN_IN_HEADING.fullmatch(self.sentence.text.strip()):
            return False
        return not (self.leans and self.sentence.position == 0)


@dataclass
class Retrieval:
    """What deterministic retrieval found; model-backed research proposes claims from it."""

    questions: list[Question]
    sources: list[Source]
    texts: dict[str, str]
    """Decoded text of each source read, by source id (what the snapshots hold)."""
    passages: list[Passage]
    ranked: dict[str, list[tuple[int, float]]]
    """Per question researched: passage indexes with BM25 scores, best first (addressing
    it only)."""
    sections: dict[str, list[tuple[int, float]]]
    """Per required section title: passage indexes on its topic, best first."""
    rarity: Rarity
    errors: list[ErrorDetail]
    receipts: list[ToolReceipt]
    """Receipts the agent reports itself: the reads, when no node's toolbox made them."""
    tool_calls: int
    """Calls the agent reports itself: its reads and searches when no node's toolbox made
    them (a node's runner charges those)."""
    all_ranked: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    """Per question of the task (not only those researched): what addresses it, so a fact
    names every question it also answers (defaults to ``ranked``)."""

    def answering(self, passage: Passage) -> list[str]:
        """The questions this passage addresses (it is in their ranking), in order."""
        return self._answers.get((passage.source.id, passage.sentence.start), [])

    @functools.cached_property
    def _answers(self) -> dict[tuple[str, int], list[str]]:
        found: dict[tuple[str, int], list[str]] = {}
        for question_id, hits in (self.all_ranked or self.ranked).items():
            for index, _ in hits:
                passage = self.passages[index]
                found.setdefault((passage.source.id, passage.sentence.start), []).append(
                    question_id
                )
        return found


class SentenceKeys(NamedTuple):
    """What a passage takes from its sentence alone.

    Its key terms, its section path's, and whether it leans on the sentence before it.
    """

    terms: frozenset[str]
    headings: frozenset[str]
    leans: bool


def sentence_keys(document: Document) -> tuple[SentenceKeys, ...]:
    """The keys of each prose sentence of a document, in order."""
    found = []
    for sentence in document.sentences:
        path = sentence.section
        headings = heading_keys(path[1:] if path[:1] == (document.title,) else path)
        found.append(SentenceKeys(keys(sentence.plain), headings, leans_on_earlier(sentence.plain)))
    return tuple(found)


def passages_of(
    source: Source, document: Document, known: Sequence[SentenceKeys] | None = None
) -> list[Passage]:
    """The prose sentences of a parsed source, as passages.

    ``known`` are the document's ``sentence_keys`` when kept with it, else worked out here.
    """
    title = heading_keys((), source.title)  # the file name when untitled
    media_type = source.snapshot.media_type
    found: list[Passage] = []
    if known is None or len(known) != len(document.sentences):
        known = sentence_keys(document)
    for sentence, (own, headings, leans) in zip(document.sentences, known, strict=True):
        first, last = document.lines_of(sentence.start, sentence.end)
        found.append(
            Passage(
                source=source,
                sentence=sentence,
                terms=own,
                headings=headings,
                context=own | headings | title,
                first_line=first,
                last_line=last,
                leans=leans,
                has_example=code_example(document, sentence, media_type) is not None,
            )
        )
    return found


def code_example(
    document: Document, sentence: ProseSentence, media_type: str
) -> CodeExample | None:
    """The code example the sentence introduces, as a fact holds it (None when too long)."""
    found = example_after(document, sentence, media_type)
    if found is None:
        return None
    text = document.text[found.start : found.end]
    if max(len(text), len(found.code)) > MAX_EXAMPLE:
        return None
    first, last = document.lines_of(found.start, found.end)
    return CodeExample(
        text=text,
        span=Span(start=found.start, end=found.end),
        lines=LineRange(first=first, last=last),
        code=None if found.code == text else found.code,
        media_type=found.media_type,
    )


def example_of(passage: Passage, text: str) -> CodeExample | None:
    """The code example a passage's sentence introduces, read from its source's ``text``.

    Read when a fact is made, from the document (parsed once per text), so a passage
    needs no more than ``has_example`` wherever it was kept.
    """
    media_type = passage.source.snapshot.media_type
    if not introduces(text, passage.sentence, media_type):
        return None
    return code_example(read_document(text, media_type), passage.sentence, media_type)


def source_number(passage: Passage) -> int:
    """The N of its source's ``src-N``: sources in the order they were read."""
    return int(passage.source.id.removeprefix("src-"))


def claim_id(passage: Passage) -> str:
    """``claim-<source number><sentence number, 3 digits>``: stable for the same corpus."""
    return f"claim-{source_number(passage)}{passage.sentence.index + 1:03d}"
