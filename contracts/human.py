"""A question put to a person, and the typed answer that resumes the run."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, model_validator

from contracts.artifacts import ArtifactRef, example_ref
from contracts.base import Contract, Identifier, ProseText, UtcDatetime, VersionedContract
from contracts.research import Question
from contracts.task import Constraints
from contracts.upgrades import upgrader

NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
"""How pause kinds and action names are spelled: snake_case, as a CLI's ``--action`` takes them."""
PauseKind = Annotated[
    str, Field(pattern=NAME_PATTERN, description="A pause's kind, as its node declares it.")
]
"""Which pause a request comes from. The kinds that exist are the declared pauses of the
workflow (``graphs.pauses``), never a list here: a new pause needs no contract edit."""
ActionName = Annotated[
    str, Field(pattern=NAME_PATTERN, description="An action, as the pause declares it.")
]
"""An answer a person may give. Which ones a request allows, and which fields each needs,
is declared by its pause; a decision is checked against that, not against a list here."""
Details = dict[str, JsonValue]
"""A pause's own data (its request or decision contract, declared with the pause), as JSON."""


class FactSummary(Contract):
    """A fact as shown to a person: id, claim and source."""

    claim_id: Identifier = Field(description="Claim id.")
    claim: str = Field(max_length=2000, description="The claim.")
    source_id: Identifier = Field(description="Its source.")
    confidence: str = Field(max_length=20, description="Its confidence level.")


class HumanRequest(VersionedContract):
    """What a person is asked, with the evidence and the actions they may take.

    Since 1.1 a request names the thread it belongs to, and its ``interrupt_id`` ends with
    that thread (``approve-research-s3.<thread>``): step numbers repeat across threads, so
    an id without the thread would let a decision written for one thread answer another.

    Since 1.2 the kind and the actions are names the pause declares (not a fixed list) and
    a request may carry its pause's own data in ``details``; 1.1 requests are upgraded.

    Since 1.3 a request may expire (``expires_at``, from the task's
    ``policies.decision_timeout``): past it, its pause's safe default answers it.
    """

    VERSION = "1.3"

    kind: Literal["human_request"] = Field(default="human_request", description="Discriminator.")
    interrupt_id: Identifier = Field(description="Id a decision must name to answer this request.")
    thread_id: str = Field(
        min_length=1, max_length=256, description="The thread this request belongs to."
    )
    request_kind: PauseKind = Field(description="Which pause this is (its declared kind).")
    question: str = Field(max_length=2000, description="What is being asked.")
    allowed_actions: list[ActionName] = Field(min_length=1, description="Actions allowed.")
    fact_count: int = Field(default=0, ge=0, description="Facts found.")
    source_count: int = Field(default=0, ge=0, description="Sources read.")
    top_facts: list[FactSummary] = Field(default_factory=list, description="Leading facts.")
    open_questions: list[Question] = Field(default_factory=list, description="Open questions.")
    artifacts: list[ArtifactRef] = Field(default_factory=list, description="Evidence artifacts.")
    changes: list[str] = Field(default_factory=list, description="What changed (stale inputs).")
    details: Details | None = Field(
        default=None,
        description="What this pause alone shows, as its declared request contract: "
        "validated by the pause when the request is made.",
    )
    expires_at: UtcDatetime | None = Field(
        default=None,
        description="When the request expires unanswered (the task's decision_timeout after "
        "it was made); past it, its pause's safe default is recorded by 'policy: expired'. "
        "None: it waits until answered.",
    )

    EXAMPLES = [
        {
            "interrupt_id": "approve-research-s3.rosetta",
            "thread_id": "rosetta",
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
            "artifacts": [example_ref("notes", "notes-rosetta")],
        }
    ]

    @upgrader(from_version="1.1", to_version="1.2")
    @classmethod
    def _pauses_declare_kinds_and_actions(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.1 request is already a valid 1.2 one, so it is passed on as it is.

        1.2 only widened the shape: a kind and its actions, a fixed list in 1.1, became
        names the pause declares (the three pauses 1.1 had still are), and ``details``,
        which 1.1 lacked, defaults to None. The version went up all the same, so that
        code reading 1.1 refuses a 1.2 request (perhaps of a kind it has never heard of)
        instead of misreading it, while threads paused under 1.1 still resume.
        """
        return data

    @upgrader(from_version="1.2", to_version="1.3")
    @classmethod
    def _requests_may_expire(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.2 request never expires: ``expires_at`` defaults to None, as it was."""
        return data


class Answer(Contract):
    """A person's answer to one open question."""

    question_id: Identifier = Field(pattern=r"^q-[0-9]+$", description="Question answered.")
    text: str = Field(min_length=1, max_length=2000, description="The answer.")


class HumanDecision(VersionedContract):
    """The typed resume payload; validated before the workflow consumes it.

    This is the shape every decision shares. Which actions a request allows, which fields
    each action needs (a reason to reject, answers to revise) and the contract of
    ``details`` are declared by the pause that asks (``graphs.pauses``): the graph and the
    Python API check a decision against its request's pause
    (``graphs.decision_schema.decision_schema``).
    Since 1.1 the action is a name the pause declares and ``details`` exists.
    """

    VERSION = "1.1"

    kind: Literal["human_decision"] = Field(default="human_decision", description="Discriminator.")
    interrupt_id: Identifier = Field(description="The request this decision answers.")
    action: ActionName = Field(description="The chosen action.")
    reason: str | None = Field(default=None, max_length=2000, description="Why (for rejections).")
    answers: list[Answer] = Field(default_factory=list, description="Answers to open questions.")
    constraints: list[ProseText] = Field(
        default_factory=list, max_length=20, description="Constraints to add, in prose."
    )
    decided_by: str = Field(default="human", max_length=100, description="Who decided.")
    details: Details | None = Field(
        default=None,
        description="Fields of the pause's own decision contract, for the actions that take "
        "them; checked against the pause's declaration.",
    )

    EXAMPLES = [
        {
            "interrupt_id": "approve-research-s3.rosetta",
            "action": "revise",
            "reason": "Name the decipherer.",
            "answers": [{"question_id": "q-2", "text": "Jean-François Champollion, in 1822."}],
            "constraints": ["Mention Thomas Young's earlier work."],
            "decided_by": "editor@example.org",
        },
        {
            "interrupt_id": "approve-research-s3.rosetta",
            "action": "reject",
            "reason": "The sources are about the Parthenon, not the Rosetta Stone.",
        },
    ]

    @model_validator(mode="after")
    def _constraints_usable(self) -> HumanDecision:
        # Which actions need a reason is the pause's to say; a constraint no article could
        # meet is refused by every pause alike.
        for index, text in enumerate(self.constraints):
            if not text.strip():
                raise ValueError(f"constraints[{index}] must not be blank")
            Constraints().tightened(text)  # refused now, not on every later step
        return self
