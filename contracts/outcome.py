"""The recorded end (or pause) of a run, as callers and A2A clients see it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts.a2a import TaskState
from contracts.artifacts import ArtifactRef, example_ref
from contracts.base import Identifier, VersionedContract
from contracts.errors import ErrorDetail, ResultStatus
from contracts.human import HumanRequest


class RunOutcome(VersionedContract):
    """Where a thread stands: the A2A task state plus the business result."""

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

    def summary(self) -> str:
        """Progress line: how the run ended."""
        return self.state.value
