"""Finalize: publish the approved draft as the article and record a completed outcome."""

from __future__ import annotations

from contracts import (
    ARTIFACT_PATH,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    Handoff,
    Question,
    ResearchBundle,
    ReviewResult,
    TaskState,
)
from graphs.approval import prove_approval
from graphs.declare import node
from graphs.freshness import summary
from graphs.node_runner import NodeCall, NodeResult
from graphs.nodes.draft_reads import DraftReads, DraftWrites
from graphs.nodes.reviewer import reviewer
from graphs.ports import ref_id
from graphs.stale import adopt_head, guard, only_revised_draft


class FinalizeInput(DraftReads):
    """The approved draft, its review, and the envelope pinning it."""

    review: ReviewResult | None


class FinalizeOutput(DraftWrites, total=False):
    """The outcome with the article; or a person's newer draft, sent back to review."""


def unanswered_error(question: Question) -> ErrorDetail:
    """A question the corpus left open and no person answered, as an outcome error."""
    return ErrorDetail(
        code=ErrorCode.INSUFFICIENT_EVIDENCE,
        detail=f"no source answers {question.id} {question.text[:300]!r}",
        field=f"questions.{question.id}",
    )


@node("finalize", reads=FinalizeInput, writes=FinalizeOutput, terminal=True, stores_artifacts=True)
def finalize(call: NodeCall) -> NodeResult:
    """Publish exactly the reviewed revision; an unreviewed one is never published.

    The approval is proven, not trusted: see ``graphs.approval``.
    """
    draft: DraftArticle = call.require("draft")
    review: ReviewResult = call.require("review")
    bundle: ResearchBundle = call.require("research")
    report, stop = guard(call, bundle=None, handoff=call.read("handoff"), draft=draft)
    if stop is not None:
        if only_revised_draft(report) and call.task.policies.on_stale == "reevaluate":
            adopted = adopt_head(draft, call.ctx.store)
            return NodeResult(
                {"draft": adopted, "freshness": report}, checked_inputs=summary(report)
            )
        return stop
    body = prove_approval(
        thread_id=call.step.thread_id,
        reviewer=reviewer.name,
        draft=draft,
        review=review,
        bundle=bundle,
        store=call.ctx.store,
        ledger=call.ctx.ledger,
    )
    article = call.ctx.store.put(
        call.step.artifact_id("article"), "article", body, draft.body.media_type
    )
    handoff: Handoff | None = call.read("handoff")
    waiting = [
        question
        for question in (handoff.open_questions if handoff else bundle.open_questions)
        if question.answer is None
    ]
    unanswered = [unanswered_error(question) for question in waiting]
    outcome = call.outcome(
        TaskState.COMPLETED,
        "partial" if waiting else "completed",
        draft=draft,
        bundle=bundle,
        errors=list(bundle.errors) + unanswered,
        reason=f"published without an answer to {len(waiting)} of the task's questions"
        if waiting
        else None,
        article=article,
        article_path=ARTIFACT_PATH.format(thread_id=call.step.thread_id, name="article"),
    )
    return NodeResult(
        update={"outcome": outcome, "freshness": report},
        artifact_ids=[ref_id(article)],
        checked_inputs=summary(report),
    )
