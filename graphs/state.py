"""WorkflowState: validated contract objects and artifact references, nothing else."""

from __future__ import annotations

from typing import TypedDict

from contracts import (
    DraftArticle,
    FreshnessReport,
    Handoff,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
    VersionedContract,
)


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
    outcome: RunOutcome | None
    freshness: FreshnessReport | None


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
    "outcome": RunOutcome,
    "freshness": FreshnessReport,
}
"""Contract of each channel.

The audit log (NodeRun records) is kept beside the thread by a RunLedger, not in state: it
must also hold attempts that failed or crashed, which never reach a checkpoint.
"""

NULLABLE_CHANNELS = frozenset(CHANNEL_CONTRACTS) - {"task"}
