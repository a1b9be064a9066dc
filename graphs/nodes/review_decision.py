"""Ask a person what to do with a draft review could not approve within the budget."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from contracts import (
    DecisionLog,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskState,
)
from graphs.declare import node
from graphs.human import ask, recorded, review_request
from graphs.node_runner import NodeCall, NodeResult
from graphs.nodes.conclude import change_error
from graphs.nodes.draft_reads import DraftReads
from graphs.pauses import Action, Pause

ReviewExhaustedAction = Literal["accept_partial", "grant_round", "abort"]
REVIEW_EXHAUSTED: Pause[ReviewExhaustedAction] = Pause(
    "review_exhausted",
    actions=(
        Action("accept_partial", inbox=("accept",)),
        Action("grant_round", inbox=("response",)),
        Action("abort", needs=("reason",), inbox=("ignore",)),
    ),
    ids="review-decision",
    literal=ReviewExhaustedAction,
)
"""Accept an unapproved draft as partial, grant another review round, or abort."""


class ReviewDecisionInput(DraftReads):
    """The unapproved draft, its review, and the envelope."""

    review: ReviewResult | None
    decisions: DecisionLog | None


class ReviewDecisionOutput(TypedDict, total=False):
    """The decision, recorded; the end unless another round was granted."""

    decisions: DecisionLog | None
    outcome: RunOutcome | None


@node(
    "review_decision",
    reads=ReviewDecisionInput,
    writes=ReviewDecisionOutput,
    pauses=REVIEW_EXHAUSTED,
)
def review_decision(call: NodeCall) -> NodeResult:
    """Accept the draft as partial, grant another round, or abort."""
    draft: DraftArticle = call.require("draft")
    review: ReviewResult = call.require("review")
    bundle: ResearchBundle = call.require("research")
    reason = (
        "the reviewer rejected it"
        if review.verdict == "rejected"
        else f"{draft.revision} review round(s) used"
    )
    request = review_request(
        REVIEW_EXHAUSTED,
        reason=reason,
        draft_revision=draft.revision,
        handoff=call.read("handoff"),
        step=call.step,
    )
    decision = ask(REVIEW_EXHAUSTED, request)
    log = recorded(call.read("decisions"), decision, request, call.step)
    chosen = REVIEW_EXHAUSTED.chosen(decision)
    if chosen == "grant_round":
        return NodeResult({"decisions": log})
    pending = [change_error(change) for change in review.required_changes]
    if chosen == "accept_partial":
        outcome = call.outcome(
            TaskState.COMPLETED,
            "partial",
            draft=draft,
            bundle=bundle,
            errors=pending,
            reason=f"accepted as partial by {decision.decided_by}",
        )
    else:
        outcome = call.outcome(
            TaskState.CANCELED,
            "failed",
            draft=draft,
            bundle=bundle,
            errors=[
                ErrorDetail(code=ErrorCode.HUMAN_ABORTED, detail=decision.reason or ""),
                *pending,
            ],
            reason=decision.reason,
        )
    return NodeResult({"decisions": log, "outcome": outcome})
