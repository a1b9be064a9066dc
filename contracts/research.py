"""What Research hands on: sourced facts, the sources themselves, and what is still unknown."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from contracts.artifacts import ArtifactRef, example_ref
from contracts.base import (
    Contract,
    Identifier,
    ProseText,
    Sha256Hex,
    UtcDatetime,
    VersionedContract,
)
from contracts.errors import ErrorDetail, ResultStatus
from contracts.provenance import Provenance
from contracts.task import TaskSpec
from contracts.upgrades import upgrader

Confidence = Literal["high", "medium", "low"]
CONFIDENCE_RULE = (
    "high: the claim is corroborated by at least two independent sources (a sentence in "
    "another source shares at least half of the claim's content terms); medium: one source, "
    "and the sentence ranks in the top three passages for its question; low: any other "
    "single-source claim."
)


class Span(Contract):
    """Character offsets of a quote inside the decoded text of a source snapshot."""

    start: int = Field(ge=0, description="Offset of the first character (inclusive).")
    end: int = Field(ge=0, description="Offset after the last character (exclusive).")

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.end <= self.start:
            raise ValueError(f"span end ({self.end}) must be greater than start ({self.start})")
        return self


class Source(Contract):
    """A document that was read, pinned to the exact bytes read via its snapshot."""

    id: Identifier = Field(pattern=r"^src-[0-9]+$", description="Source id, src-N.")
    uri: str = Field(max_length=2000, description="Where the source was read from.")
    title: str = Field(max_length=300, description="Title of the document.")
    retrieved_at: UtcDatetime = Field(description="When the source was read (UTC).")
    sha256: Sha256Hex = Field(description="sha256 of the bytes that were read.")
    snapshot: ArtifactRef = Field(description="Snapshot of those bytes in the artifact store.")


def _check_span(span: Span, text: str, name: str) -> None:
    """A span holds its text exactly: as many characters as it covers."""
    if span.end - span.start != len(text):
        raise ValueError(
            f"span length {span.end - span.start} differs from {name} length {len(text)}"
        )


class LineRange(Contract):
    """The lines a quote covers in its source, so a reader can find it without tools."""

    first: int = Field(ge=1, description="First line (1-based).")
    last: int = Field(ge=1, description="Last line (1-based, inclusive).")

    @model_validator(mode="after")
    def _ordered(self) -> LineRange:
        if self.last < self.first:
            raise ValueError(f"last line ({self.last}) must not precede first ({self.first})")
        return self


class CodeExample(Contract):
    """The code block a fact's sentence introduces: evidence shown as code, never as a sentence.

    A sentence ending with a colon ("To start a worker, run:") says nothing without the
    block under it, so the two are cited together: the article shows ``shown`` as a fenced
    block right after the sentence, and the Reviewer checks it against the source as it
    checks a quote.
    """

    text: str = Field(
        min_length=1,
        max_length=4000,
        description="The source text at the span, verbatim: fence lines, indentation and "
        "markup (an HTML page's tags and entities) included.",
    )
    span: Span = Field(description="Where the block sits in the source snapshot.")
    lines: LineRange = Field(description="Lines of the block in its source.")
    code: str | None = Field(
        default=None,
        min_length=1,
        max_length=4000,
        description="The code as a reader sees it, when it differs from `text` (fence lines, "
        "indentation, tags and entities taken out, by the rule of the source's format); "
        "absent when `text` is the code itself (see `shown`).",
    )
    media_type: str = Field(
        max_length=100,
        description="Media type of the code: text/x-python, text/x-shellscript, text/plain...",
    )

    @property
    def shown(self) -> str:
        """The code a reader is shown: ``code``, else the verbatim text."""
        return self.code if self.code is not None else self.text

    @model_validator(mode="after")
    def _span_fits_text(self) -> CodeExample:
        _check_span(self.span, self.text, "example text")
        return self


class Fact(Contract):
    """One claim with the verbatim evidence for it; the unit every later hop cites."""

    id: Identifier = Field(pattern=r"^claim-[0-9]+$", description="Claim id, claim-N.")
    claim: str | None = Field(
        default=None,
        min_length=1,
        max_length=2000,
        description="The claim in prose, when it is worded differently from the quote; "
        "absent when the quote states the claim verbatim (see `statement`).",
    )
    source_id: Identifier = Field(pattern=r"^src-[0-9]+$", description="Source of the quote.")
    quote: str = Field(min_length=1, max_length=2000, description="Verbatim supporting text.")
    span: Span = Field(description="Where the quote sits in the source snapshot.")
    confidence: Confidence = Field(description=f"Confidence level. Rule: {CONFIDENCE_RULE}")
    corroborating_source_ids: list[Identifier] = Field(
        default_factory=list, description="Other sources that state the same claim."
    )
    question_id: Identifier | None = Field(
        default=None, description="Research question this fact answers."
    )
    also_answers: list[Identifier] = Field(
        default_factory=list,
        max_length=20,
        description="Other research questions this fact addresses, besides question_id.",
    )
    section: list[str] = Field(
        default_factory=list,
        max_length=12,
        description="Heading path above the quote in its source, outermost first.",
    )
    lines: LineRange | None = Field(default=None, description="Lines of the quote in its source.")
    leans_on: Identifier | None = Field(
        default=None,
        pattern=r"^claim-[0-9]+$",
        description="A fact this one cannot be understood without (the earlier sentence of "
        "its paragraph that names what its pronoun refers to); cited before it or not at all.",
    )
    example: CodeExample | None = Field(
        default=None,
        description="The code block the quote introduces (its sentence ends with a colon, "
        "or vim's `>` follows it), right after it in its section; such a fact is cited "
        "only with its example shown after it.",
    )
    provenance: Provenance = Field(
        description="Producer (the extracting agent), node and step that recorded the fact."
    )

    @property
    def answers(self) -> list[str]:
        """Every research question this fact addresses: ``question_id``, then the others."""
        return ([self.question_id] if self.question_id else []) + list(self.also_answers)

    @property
    def statement(self) -> str:
        """What the fact claims: its own wording, else the verbatim quote."""
        return self.claim if self.claim is not None else self.quote

    @model_validator(mode="after")
    def _span_fits_quote(self) -> Fact:
        _check_span(self.span, self.quote, "quote")
        return self


class Question(Contract):
    """A part of the objective research must answer, and (later) a human's answer to it."""

    id: Identifier = Field(pattern=r"^q-[0-9]+$", description="Question id, q-N.")
    text: ProseText = Field(description="The question.")
    answer: str | None = Field(
        default=None,
        max_length=2000,
        description="An answer given by a human; never a fact, never cited as one.",
    )
    answered_by: Provenance | None = Field(default=None, description="Who answered.")


class ResearchBundle(VersionedContract):
    """Research's whole result: the only thing the Writer may write from."""

    VERSION: ClassVar[str] = "1.2"

    kind: Literal["research_bundle"] = Field(
        default="research_bundle", description="Discriminator."
    )
    task_id: Identifier = Field(description="Task this research serves.")
    result_status: ResultStatus = Field(description="completed, partial or failed.")
    facts: list[Fact] = Field(default_factory=list, description="Extracted, sourced facts.")
    sources: list[Source] = Field(default_factory=list, description="Sources read.")
    open_questions: list[Question] = Field(
        default_factory=list, description="Parts of the objective without evidence."
    )
    artifact_refs: list[ArtifactRef] = Field(
        default_factory=list, description="Raw notes and other research artifacts."
    )
    errors: list[ErrorDetail] = Field(default_factory=list, description="Problems met.")
    retryable: bool = Field(default=False, description="Whether retrying may help.")
    widened: bool = Field(
        default=False, description="Retrieval was widened after a first pass found too little."
    )
    missing_inputs: list[str] = Field(
        default_factory=list, description="Inputs that were needed but absent."
    )

    EXAMPLES = [
        {
            "task_id": "rosetta",
            "result_status": "partial",
            "facts": [
                {
                    "id": "claim-1",
                    "claim": "The stone repeats one decree in three scripts.",
                    "source_id": "src-1",
                    "quote": (
                        "The Rosetta Stone carries the same decree in hieroglyphic, "
                        "Demotic and Greek."
                    ),
                    "span": {"start": 120, "end": 197},
                    "confidence": "medium",
                    "question_id": "q-1",
                    "section": ["The Rosetta Stone", "What it says"],
                    "lines": {"first": 7, "last": 7},
                    "provenance": {"producer": "research", "node": "research", "step": 3},
                }
            ],
            "sources": [
                {
                    "id": "src-1",
                    "uri": "file:///corpus/rosetta.md",
                    "title": "The Rosetta Stone",
                    "retrieved_at": "2025-05-01T09:30:00Z",
                    "sha256": "3f" * 32,
                    "snapshot": example_ref("source", "src-1"),
                }
            ],
            "open_questions": [{"id": "q-2", "text": "Who deciphered the hieroglyphs, and how?"}],
            "artifact_refs": [example_ref("notes", "notes-rosetta")],
            "errors": [
                {
                    "code": "INSUFFICIENT_EVIDENCE",
                    "detail": "No source names the decipherer.",
                    "field": "questions[1]",
                }
            ],
            "retryable": True,
            "missing_inputs": ["a source on Champollion"],
        }
    ]

    @upgrader(from_version="1.1", to_version="1.2")
    @classmethod
    def _facts_may_carry_examples(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.1 bundle is a 1.2 one whose facts carry no code example."""
        return data

    @model_validator(mode="after")
    def _facts_cite_known_sources(self) -> ResearchBundle:
        source_ids = [source.id for source in self.sources]
        if len(source_ids) != len(set(source_ids)):
            raise ValueError("sources must have unique ids")
        for index, fact in enumerate(self.facts):
            for cited in (fact.source_id, *fact.corroborating_source_ids):
                if cited not in source_ids:
                    raise ValueError(f"facts[{index}] ({fact.id}) cites unknown source {cited!r}")
        ids = [fact.id for fact in self.facts]
        if len(ids) != len(set(ids)):
            raise ValueError("facts must have unique ids")
        for index, fact in enumerate(self.facts):
            if fact.leans_on is not None and fact.leans_on not in ids:
                raise ValueError(
                    f"facts[{index}] ({fact.id}) leans on unknown fact {fact.leans_on!r}"
                )
        return self

    def fact(self, claim_id: str) -> Fact | None:
        """The fact with this id, if research produced it."""
        return next((fact for fact in self.facts if fact.id == claim_id), None)

    def source(self, source_id: str) -> Source | None:
        """The source with this id, if research read it."""
        return next((source for source in self.sources if source.id == source_id), None)

    def summary(self) -> str:
        """Progress line: how much evidence research found."""
        found = f"{len(self.facts)} facts from {len(self.sources)} sources"
        return f"{found} (widened retry)" if self.widened else found


def research_questions(task: TaskSpec) -> list[Question]:
    """The task's research questions with their ids: q-1 is the objective, then q-2, ...

    The ids are made here only: research's branches are keyed by them, agents rank and
    report by them, and facts name them.
    """
    return [
        Question(id=f"q-{index + 1}", text=text)
        for index, text in enumerate(task.research_questions())
    ]
