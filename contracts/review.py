"""What the Reviewer decides, per claim, with reasons the Writer can act on."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from contracts.artifacts import ArtifactRef, example_ref
from contracts.base import Contract, Identifier, Sha256Hex, VersionedContract
from contracts.errors import ErrorCode

Verdict = Literal["approved", "changes_requested", "rejected"]


class RequiredChange(Contract):
    """One change the Writer must make before approval."""

    code: ErrorCode = Field(description="What is wrong, as a stable code.")
    reason: str = Field(max_length=2000, description="What is wrong, in prose.")
    claim_id: Identifier | None = Field(default=None, description="Claim concerned, if any.")
    section: str | None = Field(default=None, max_length=200, description="Section concerned.")


class ReviewResult(VersionedContract):
    """The Reviewer's verdict on one draft revision."""

    VERSION: ClassVar[str] = "1.1"

    kind: Literal["review_result"] = Field(default="review_result", description="Discriminator.")
    task_id: Identifier = Field(description="Task this review serves.")
    draft_revision: int = Field(ge=1, description="Draft revision that was reviewed.")
    verdict: Verdict = Field(description="approved, changes_requested or rejected.")
    draft_sha256: Sha256Hex | None = Field(
        default=None,
        description="sha256 of the draft body this review read, stamped by the reviewer "
        "node: finalize publishes only these exact bytes.",
    )
    accepted_claims: list[Identifier] = Field(
        default_factory=list, description="Cited claims verified against their sources."
    )
    rejected_claims: list[Identifier] = Field(
        default_factory=list, description="Cited claims that failed verification."
    )
    required_changes: list[RequiredChange] = Field(
        default_factory=list, description="Changes needed before approval."
    )
    checked_sources: list[Identifier] = Field(
        default_factory=list, description="Sources whose snapshots were checked."
    )
    report: ArtifactRef | None = Field(default=None, description="Full review report artifact.")

    EXAMPLES = [
        {
            "task_id": "rosetta",
            "draft_revision": 2,
            "verdict": "changes_requested",
            "accepted_claims": ["claim-1"],
            "rejected_claims": ["claim-7"],
            "required_changes": [
                {
                    "code": "MISSING_SECTION",
                    "reason": "The Decipherment section is missing.",
                    "section": "Decipherment",
                }
            ],
            "checked_sources": ["src-1"],
            "report": example_ref("review", "review-rosetta"),
        }
    ]

    def summary(self) -> str:
        """Progress line: the verdict."""
        return f"verdict {self.verdict}"
