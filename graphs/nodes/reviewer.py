"""Reviewer: verify every citation against its source snapshot, and the constraints."""

from __future__ import annotations

from contracts import (
    DecisionLog,
    DraftArticle,
    Handoff,
    ResearchBundle,
    ReviewResult,
)
from graphs.agents import ReviewerAgent, ReviewRequest
from graphs.constraints import task_in_force
from graphs.declare import node
from graphs.freshness import summary
from graphs.node_runner import NodeCall, NodeResult
from graphs.nodes.draft_reads import DraftReads, DraftWrites
from graphs.ports import ref_id
from graphs.stale import adopt_head, guard, only_revised_draft


class ReviewerInput(DraftReads):
    """The draft, the facts it cites, and the envelope."""

    decisions: DecisionLog | None


class ReviewerOutput(DraftWrites, total=False):
    """The review, and the draft it reviewed (a person's newer revision, if adopted)."""

    review: ReviewResult | None


@node(
    "reviewer",
    reads=ReviewerInput,
    writes=ReviewerOutput,
    agent=ReviewerAgent,
    stores_artifacts=True,
)
def reviewer(call: NodeCall) -> NodeResult:
    """Review the draft it was handed; a person's newer revision of it is what gets reviewed."""
    handoff: Handoff = call.require("handoff")
    bundle: ResearchBundle = call.require("research")
    draft: DraftArticle = call.require("draft")
    report, stop = guard(call, bundle=bundle, handoff=handoff, draft=draft)
    if stop is not None:
        if not (only_revised_draft(report) and call.task.policies.on_stale == "reevaluate"):
            return stop
        draft = adopt_head(draft, call.ctx.store)
        report, stop = guard(call, bundle=bundle, handoff=handoff, draft=draft)
        if stop is not None:
            return stop
    review: ReviewResult
    review = call.delegate(
        ReviewRequest, "review", task=task_in_force(call.task, handoff), draft=draft
    )
    # The node, not the agent, names the bytes reviewed: finalize publishes only those.
    review = review.model_copy(update={"draft_sha256": draft.body.sha256})
    return NodeResult(
        {"review": review, "draft": draft, "freshness": report},
        artifact_ids=[ref_id(review.report)] if review.report else [],
        checked_inputs=summary(report),
    )
