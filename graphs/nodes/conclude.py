"""Conclude: record why a run ends without an approved article."""

from __future__ import annotations

from typing_extensions import TypedDict

from contracts import (
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    RequiredChange,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs.declare import node
from graphs.node_runner import NodeCall, NodeResult
from graphs.nodes.finalize import unanswered_error


class ConcludeInput(TypedDict):
    """What the run produced before it could not go on."""

    task: TaskSpec
    research: ResearchBundle | None
    draft: DraftArticle | None
    review: ReviewResult | None


class ConcludeOutput(TypedDict, total=False):
    """The recorded end."""

    outcome: RunOutcome | None


def change_error(change: RequiredChange) -> ErrorDetail:
    """A reviewer's required change, as an error of the outcome."""
    return ErrorDetail(code=change.code, detail=change.reason, claim_id=change.claim_id)


def unanswerable(bundle: ResearchBundle | None) -> bool:
    """Research read its sources and found they answer none of the task's questions.

    That is the corpus' answer, not a failure of the run: it ends partial with each
    question named, the same as a question left open in a published article.
    """
    if bundle is None or bundle.facts or not bundle.sources or not bundle.open_questions:
        return False
    return all(error.code == ErrorCode.INSUFFICIENT_EVIDENCE for error in bundle.errors)


@node("conclude", reads=ConcludeInput, writes=ConcludeOutput, terminal=True)
def conclude(call: NodeCall) -> NodeResult:
    """Record why a run ends without an approved article: failed research, writing or review."""
    bundle: ResearchBundle | None = call.read("research")
    draft: DraftArticle | None = call.read("draft")
    review: ReviewResult | None = call.read("review")
    errors: list[ErrorDetail] = list(bundle.errors) if bundle else []
    if unanswerable(bundle):
        assert bundle is not None
        outcome = call.outcome(
            TaskState.COMPLETED,
            "partial",
            errors=[unanswered_error(question) for question in bundle.open_questions] + errors,
            reason="the corpus answers none of the task's questions; nothing was written",
        )
    elif bundle is None or bundle.result_status == "failed" or not bundle.facts:
        if not errors:
            errors.append(
                ErrorDetail(
                    code=ErrorCode.INSUFFICIENT_EVIDENCE,
                    detail="research produced no usable facts",
                )
            )
        outcome = call.outcome(
            TaskState.FAILED,
            "failed",
            bundle=bundle,
            errors=errors,
            retryable=bundle.retryable if bundle else False,
            missing_inputs=list(bundle.missing_inputs) if bundle else [],
            reason=f"research failed: {errors[0].detail}",
        )
    elif draft is not None and draft.result_status == "failed":
        outcome = call.outcome(
            TaskState.FAILED,
            "failed",
            draft=draft,
            bundle=bundle,
            errors=errors + list(draft.errors),
            review_rounds=draft.revision - 1,
            reason="the writer could not write a draft"
            + (f": {draft.errors[0].detail}" if draft.errors else ""),
        )
    elif review is not None and review.verdict == "rejected":
        errors.append(
            ErrorDetail(code=ErrorCode.REVIEW_REJECTED, detail="the reviewer rejected the draft")
        )
        outcome = call.outcome(
            TaskState.REJECTED,  # the reviewer refused the draft: nothing is published
            "failed",
            draft=draft,
            bundle=bundle,
            errors=errors + [change_error(change) for change in review.required_changes],
            reason="the reviewer rejected the draft",
        )
    else:
        rounds = draft.revision if draft else 0
        errors.append(
            ErrorDetail(
                code=ErrorCode.BUDGET_EXHAUSTED,
                detail=f"review rounds exhausted after {rounds} of "
                f"{call.task.budget.max_review_rounds} without approval",
            )
        )
        pending = review.required_changes if review else []
        outcome = call.outcome(
            TaskState.COMPLETED,
            "partial",
            draft=draft,
            bundle=bundle,
            errors=errors + [change_error(change) for change in pending],
            retryable=True,
            reason="the draft was not approved within the review-round budget",
        )
    return NodeResult(update={"outcome": outcome})
