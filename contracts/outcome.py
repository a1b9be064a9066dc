"""The recorded end (or pause) of a run, as callers and A2A clients see it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from contracts.a2a import TaskState
from contracts.artifacts import ArtifactRef, example_ref
from contracts.base import Identifier, VersionedContract
from contracts.errors import ErrorDetail, ResultStatus
from contracts.human import HumanRequest
from contracts.upgrades import upgrader

ARTIFACT_PATH = "/threads/{thread_id}/artifacts/{name}"
"""Where a server serving a thread answers one of its artifacts by name (GET, relative to the
server's URL; ``app/server/artifacts_http.py`` serves it)."""


class RunOutcome(VersionedContract):
    """Where a thread stands: the A2A task state plus the business result.

    Since 1.1 a published outcome names where a server serving the thread answers the
    article's bytes (``article_path``).
    """

    VERSION = "1.1"

    kind: Literal["run_outcome"] = Field(default="run_outcome", description="Discriminator.")
    thread_id: str = Field(max_length=128, description="Thread the run belongs to.")
    task_id: Identifier = Field(description="Task the run served.")
    state: TaskState = Field(description="A2A task state.")
    result_status: ResultStatus | None = Field(
        default=None, description="Business result; None while the task is not terminal."
    )
    errors: list[ErrorDetail] = Field(default_factory=list, description="Why it is not complete.")
    retryable: bool = Field(default=False, description="Whether retrying may help.")
    missing_inputs: list[str] = Field(default_factory=list, description="Inputs that were absent.")
    article: ArtifactRef | None = Field(default=None, description="Final article, if approved.")
    article_path: str | None = Field(
        default=None,
        max_length=400,
        description="Where a server serving this thread answers the article's bytes, verified "
        "(GET, relative to the server's URL); None until the article is published.",
    )
    draft: ArtifactRef | None = Field(default=None, description="Latest draft, if any.")
    review_rounds: int = Field(default=0, ge=0, description="Review rounds completed.")
    fact_count: int = Field(default=0, ge=0, description="Facts research produced.")
    human_request: HumanRequest | None = Field(
        default=None, description="The open request when state is INPUT_REQUIRED."
    )
    reason: str | None = Field(default=None, max_length=2000, description="Reason, in prose.")

    EXAMPLES = [
        {
            "thread_id": "thread-rosetta-1",
            "task_id": "rosetta",
            "state": "TASK_STATE_INPUT_REQUIRED",
            "draft": example_ref("draft", "draft-rosetta"),
            "review_rounds": 1,
            "fact_count": 1,
            "human_request": {
                **HumanRequest.EXAMPLES[0],
                "interrupt_id": "approve-research-s3.thread-rosetta-1",
                "thread_id": "thread-rosetta-1",
            },
            "reason": "Waiting for approval of the research.",
        }
    ]

    @upgrader(from_version="1.0", to_version="1.1")
    @classmethod
    def _names_the_article_path(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A 1.0 outcome is a 1.1 one that does not say where a server answers its article."""
        return data

    def summary(self) -> str:
        """Progress line: how the run ended, and the article revision it published.

        A revision run publishes the article's next revision: the line says which, so
        the progress of ``handoff revise`` names what it produced.
        """
        if self.article is None:
            return self.state.value
        return f"{self.state.value} · article revision {self.article.revision}"
