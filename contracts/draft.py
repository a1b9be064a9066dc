"""What the Writer hands the Reviewer: a pointer to the body, and what it cites."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts.artifacts import ArtifactRef, example_ref
from contracts.base import Identifier, VersionedContract
from contracts.errors import ErrorDetail, ResultStatus


class DraftArticle(VersionedContract):
    """One round's draft; the markdown body lives in the artifact store."""

    kind: Literal["draft_article"] = Field(default="draft_article", description="Discriminator.")
    task_id: Identifier = Field(description="Task this draft serves.")
    result_status: ResultStatus = Field(description="completed, partial or failed.")
    revision: int = Field(ge=1, description="Writing round that produced this draft (1, 2, ...).")
    body: ArtifactRef = Field(description="The markdown body in the artifact store.")
    cited_claim_ids: list[Identifier] = Field(
        default_factory=list, description="Claim ids the body cites."
    )
    excluded_claim_ids: list[Identifier] = Field(
        default_factory=list,
        description="Claims left out because a review rejected them; stays out in later rounds.",
    )
    addressed_changes: list[str] = Field(
        default_factory=list,
        description="Codes/ids of the reviewer's required changes this round addressed.",
    )
    word_count: int = Field(ge=0, description="Words in the body, excluding headings/citations.")
    errors: list[ErrorDetail] = Field(default_factory=list, description="Problems met.")

    EXAMPLES = [
        {
            "task_id": "rosetta",
            "result_status": "completed",
            "revision": 2,
            "body": example_ref("draft", "draft-rosetta"),
            "cited_claim_ids": ["claim-1"],
            "excluded_claim_ids": ["claim-7"],
            "addressed_changes": ["UNCITED_SENTENCE"],
            "word_count": 412,
        }
    ]

    def summary(self) -> str:
        """Progress line: which round, how long."""
        return f"draft revision {self.revision}, {self.word_count} words"
