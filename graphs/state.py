"""WorkflowState: validated contract objects and artifact references, nothing else."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from contracts import (
    DraftArticle,
    Handoff,
    HumanRequest,
    NodeRun,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
    VersionedContract,
)


def append_node_runs(current: list[Any] | None, new: list[Any] | None) -> list[NodeRun]:
    """Audit reducer: append-only, and every record is validated on the way in."""
    existing = [NodeRun.model_validate(item) for item in current or []]
    return existing + [NodeRun.model_validate(item) for item in new or []]


class WorkflowInput(TypedDict):
    """What a caller (Python, CLI or the dev server) passes to start a run."""

    task: TaskSpec


class WorkflowState(TypedDict, total=False):
    """The thread's state. Each value is a contract; large content is referenced only."""

    task: TaskSpec
    handoff: Handoff | None
    research: ResearchBundle | None
    draft: DraftArticle | None
    review: ReviewResult | None
    human_request: HumanRequest | None
    outcome: RunOutcome | None
    audit: Annotated[list[NodeRun], append_node_runs]


class WorkflowOutput(TypedDict, total=False):
    """What a finished run returns to its caller."""

    outcome: RunOutcome | None
    research: ResearchBundle | None
    draft: DraftArticle | None
    review: ReviewResult | None


CHANNEL_CONTRACTS: dict[str, type[VersionedContract]] = {
    "task": TaskSpec,
    "handoff": Handoff,
    "research": ResearchBundle,
    "draft": DraftArticle,
    "review": ReviewResult,
    "human_request": HumanRequest,
    "outcome": RunOutcome,
    "audit": NodeRun,
}
"""Contract of each channel; ``audit`` holds a list of NodeRun."""

LIST_CHANNELS = frozenset({"audit"})
NULLABLE_CHANNELS = frozenset(CHANNEL_CONTRACTS) - {"task", "audit"}
