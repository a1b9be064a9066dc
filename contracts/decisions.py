"""Decisions people made during a run: state of their own, never copied between envelopes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts.base import Contract, Identifier, VersionedContract
from contracts.freshness import RefCheck
from contracts.human import ActionName, Answer, Details, PauseKind
from contracts.provenance import Provenance


class RecordedDecision(Contract):
    """One answered request: what was decided, by whom, and what it changed."""

    interrupt_id: Identifier = Field(description="The request it answered.")
    request_kind: PauseKind = Field(description="Which pause it answered.")
    action: ActionName = Field(description="The chosen action.")
    reason: str | None = Field(default=None, max_length=2000, description="Why, if given.")
    decided_by: str = Field(max_length=100, description="Who decided.")
    answers: list[Answer] = Field(default_factory=list, description="Questions answered.")
    constraints: list[str] = Field(default_factory=list, description="Constraints added.")
    repins: list[RefCheck] = Field(
        default_factory=list,
        description="Changed sources a person accepted at their new content "
        "(accept_new_revision): each moves the pin from its recorded to its current hash.",
    )
    details: Details | None = Field(
        default=None, description="The pause's own decision fields, as the person gave them."
    )
    provenance: Provenance = Field(description="Where it was recorded.")

    def summary(self) -> str:
        """The decision as one line, as envelopes and people read it."""
        text = f"{self.action} by {self.decided_by}"
        return f"{text}: {self.reason}" if self.reason else text


class DecisionLog(VersionedContract):
    """Every decision of the thread, oldest first; the handoff envelope is derived from it.

    Since 1.1 a recorded decision names any declared pause and action, and keeps the
    pause's own ``details``.
    """

    VERSION = "1.1"

    kind: Literal["decision_log"] = Field(default="decision_log", description="Discriminator.")
    decisions: list[RecordedDecision] = Field(
        max_length=1000, description="Decisions, oldest first."
    )

    EXAMPLES = [
        {
            "decisions": [
                {
                    "interrupt_id": "approve-research-s3.rosetta",
                    "request_kind": "approve_research",
                    "action": "approve",
                    "decided_by": "editor",
                    "constraints": ["at most 150 words"],
                    "provenance": {"producer": "human", "node": "approve_research", "step": 3},
                }
            ]
        }
    ]

    def granted_review_rounds(self) -> int:
        """Extra review rounds people granted beyond the budget."""
        return sum(1 for item in self.decisions if item.action == "grant_round")

    def last(self) -> RecordedDecision | None:
        """The latest decision, if any."""
        return self.decisions[-1] if self.decisions else None

    def with_decision(self, decision: RecordedDecision) -> DecisionLog:
        """The log with one more decision."""
        return self.model_copy(update={"decisions": [*self.decisions, decision]})

    def summary(self) -> str:
        """Progress line: the latest decision."""
        last = self.last()
        return f"decision: {last.summary()}" if last else ""
