"""A question put to a person, and the typed answer that resumes the run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from contracts.artifacts import ArtifactRef
from contracts.base import Contract, Identifier, ProseText, VersionedContract, upgrader
from contracts.research import Question
from contracts.task import Constraints

HumanAction = Literal[
    "approve",
    "revise",
    "reject",
    "accept_partial",
    "grant_round",
    "abort",
    "accept_new_revision",
    "rerun_producer",
]
RequestKind = Literal["approve_research", "review_exhausted", "stale_input"]
REASON_REQUIRED: tuple[HumanAction, ...] = ("reject", "abort")
"""Actions a decision must give a reason for."""


class FactSummary(Contract):
    """A fact as shown to a person: id, claim and source."""

    claim_id: Identifier = Field(description="Claim id.")
    claim: str = Field(max_length=2000, description="The claim.")
    source_id: Identifier = Field(description="Its source.")
    confidence: str = Field(max_length=20, description="Its confidence level.")


class HumanRequest(VersionedContract):
    """What a person is asked, with the evidence and the actions they may take.

    Since 1.1 a request names the thread it belongs to, and its ``interrupt_id`` ends with
    that thread (``approve-research-s2.<thread>``): step numbers repeat across threads, so
    an id without the thread would let a decision written for one thread answer another.
    Requests saved by 1.0 have no thread; they keep their id and accept decisions naming it.
    """

    VERSION = "1.1"

    kind: Literal["human_request"] = Field(default="human_request", description="Discriminator.")
    interrupt_id: Identifier = Field(description="Id a decision must name to answer this request.")
    thread_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="The thread this request belongs to; None on requests saved before 1.1.",
    )
    request_kind: RequestKind = Field(description="Which decision point this is.")
    question: str = Field(max_length=2000, description="What is being asked.")
    allowed_actions: list[HumanAction] = Field(min_length=1, description="Actions allowed.")
    fact_count: int = Field(default=0, ge=0, description="Facts found.")
    source_count: int = Field(default=0, ge=0, description="Sources read.")
    top_facts: list[FactSummary] = Field(default_factory=list, description="Leading facts.")
    open_questions: list[Question] = Field(default_factory=list, description="Open questions.")
    artifacts: list[ArtifactRef] = Field(default_factory=list, description="Evidence artifacts.")
    changes: list[str] = Field(default_factory=list, description="What changed (stale inputs).")

    EXAMPLES = [
        {
            "interrupt_id": "approve-research-1",
            "request_kind": "approve_research",
            "question": "Research found 1 fact from 1 source. Approve writing?",
            "allowed_actions": ["approve", "revise", "reject"],
            "fact_count": 1,
            "source_count": 1,
            "top_facts": [
                {
                    "claim_id": "claim-1",
                    "claim": "The stone repeats one decree in three scripts.",
                    "source_id": "src-1",
                    "confidence": "medium",
                }
            ],
            "open_questions": [{"id": "q-2", "text": "Who deciphered the hieroglyphs, and how?"}],
            "artifacts": [
                {
                    "artifact_id": "notes-rosetta",
                    "kind": "notes",
                    "uri": "artifact://notes/notes-rosetta",
                    "media_type": "text/markdown",
                    "sha256": "0123456789abcdef" * 4,
                    "revision": 2,
                    "size_bytes": 1234,
                }
            ],
        }
    ]

    @upgrader(from_version="1.0", to_version="1.1")
    @classmethod
    def _requests_name_their_thread(cls, data: dict[str, Any]) -> dict[str, Any]:
        # A 1.0 request was saved without its thread: it stays unbound (thread_id None).
        return data


class Answer(Contract):
    """A person's answer to one open question."""

    question_id: Identifier = Field(pattern=r"^q-[0-9]+$", description="Question answered.")
    text: str = Field(min_length=1, max_length=2000, description="The answer.")


class HumanDecision(VersionedContract):
    """The typed resume payload; validated before the workflow consumes it."""

    kind: Literal["human_decision"] = Field(default="human_decision", description="Discriminator.")
    interrupt_id: Identifier = Field(description="The request this decision answers.")
    action: HumanAction = Field(description="The chosen action.")
    reason: str | None = Field(default=None, max_length=2000, description="Why (for rejections).")
    answers: list[Answer] = Field(default_factory=list, description="Answers to open questions.")
    constraints: list[ProseText] = Field(
        default_factory=list, max_length=20, description="Constraints to add, in prose."
    )
    decided_by: str = Field(default="human", max_length=100, description="Who decided.")

    EXAMPLES = [
        {
            "interrupt_id": "approve-research-1",
            "action": "revise",
            "reason": "Name the decipherer.",
            "answers": [{"question_id": "q-2", "text": "Jean-François Champollion, in 1822."}],
            "constraints": ["Mention Thomas Young's earlier work."],
            "decided_by": "editor@example.org",
        },
        {
            "interrupt_id": "approve-research-1",
            "action": "reject",
            "reason": "The sources are about the Parthenon, not the Rosetta Stone.",
        },
    ]

    @model_validator(mode="after")
    def _reason_for_rejection(self) -> HumanDecision:
        if self.action in REASON_REQUIRED and not (self.reason and self.reason.strip()):
            raise ValueError(f"reason is required when action is {self.action!r}")
        for index, text in enumerate(self.constraints):
            if not text.strip():
                raise ValueError(f"constraints[{index}] must not be blank")
            Constraints().tightened(text)  # refused now, not on every later step
        return self
