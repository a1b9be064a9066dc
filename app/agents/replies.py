"""The JSON shape each model-backed agent's reply must have, and how a prompt asks for it.

A reply is parsed with ``model_validate_json``; one that does not validate gets one repair
(``prompts.repair_prompt``), so each schema's descriptions are what the model is told.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.text.primitives import CITATION

_CLAIM_ID = r"^claim-[0-9]+$"


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class ProposedClaim(_Reply):
    """One claim a model proposes from a passage; it becomes a Fact only if verified."""

    claim: str = Field(
        min_length=1,
        max_length=600,
        description="The claim in plain prose, saying no more than the quote says.",
    )
    source_id: str = Field(
        pattern=r"^src-[0-9]+$", description="The [src-N] tag of the passage quoted."
    )
    quote: str = Field(
        min_length=8,
        max_length=1000,
        description="Words copied exactly, character for character, from that one passage.",
    )


class ResearchReply(_Reply):
    """Research's answer: claims, each with a verbatim quote."""

    claims: list[ProposedClaim] = Field(
        max_length=30, description="Claims that help answer the questions, best first."
    )


class DraftReply(_Reply):
    """The Writer's answer: the whole article."""

    markdown: str = Field(
        min_length=1,
        max_length=40_000,
        description="The article in markdown: a '# ' title, '## ' sections, and every "
        "sentence ending with its [claim-N] citations.",
    )

    @field_validator("markdown")
    @classmethod
    def _cites_claims(cls, value: str) -> str:
        if not CITATION.search(value):
            raise ValueError("the article cites no claim: end each sentence with [claim-N]")
        return value


CritiqueCode = Literal[
    "UNSUPPORTED_SENTENCE", "UNCITED_SENTENCE", "CONSTRAINT_VIOLATED", "MISSING_SECTION"
]


class CritiqueItem(_Reply):
    """One change the Reviewer's model asks for."""

    code: CritiqueCode = Field(
        default="CONSTRAINT_VIOLATED",
        description="UNSUPPORTED_SENTENCE: says more than its cited facts; UNCITED_SENTENCE: "
        "no citation; MISSING_SECTION: a required section is missing; CONSTRAINT_VIOLATED: "
        "the objective or a constraint is not met.",
    )
    reason: str = Field(
        min_length=1, max_length=500, description="What to change, so the writer can act on it."
    )
    claim_id: str | None = Field(default=None, pattern=_CLAIM_ID, description="Claim concerned.")
    section: str | None = Field(default=None, max_length=200, description="Section concerned.")


class ReviewReply(_Reply):
    """The Reviewer's answer: a verdict and the changes behind it."""

    verdict: Literal["approve", "changes_requested"] = Field(
        description="approve only if you found nothing to change."
    )
    changes: list[CritiqueItem] = Field(
        default_factory=list, max_length=10, description="Changes needed; empty to approve."
    )

    @model_validator(mode="after")
    def _verdict_matches_changes(self) -> ReviewReply:
        if self.verdict == "approve" and self.changes:
            raise ValueError("verdict 'approve' must come with an empty changes list")
        if self.verdict == "changes_requested" and not self.changes:
            raise ValueError("verdict 'changes_requested' needs at least one change")
        return self


@cache
def schema_text(schema: type[BaseModel]) -> str:
    """The reply's JSON Schema, compact, as shown to the model."""
    return json.dumps(schema.model_json_schema(), separators=(",", ":"), ensure_ascii=False)


def reply_format(schema: type[BaseModel]) -> str:
    """What a system prompt says of the reply: one JSON object validating against the schema."""
    return (
        "Reply with one JSON object and nothing else (no prose, no code fence) that "
        f"validates against this JSON Schema:\n{schema_text(schema)}"
    )
