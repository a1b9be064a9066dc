"""The workflow's nodes: agents do the work, these functions own the flow.

Each validates what it reads, does one bounded step and returns contract objects.
"""

from __future__ import annotations

from dataclasses import replace

from contracts import (
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    FreshnessReport,
    Handoff,
    RequiredChange,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskState,
    Usage,
)
from graphs.constraints import task_in_force
from graphs.freshness import check_inputs, summary
from graphs.handoffs import build_handoff
from graphs.human import approval_request, ask, review_request
from graphs.node_runner import NodeCall, NodeResult
from graphs.stale import (
    MAX_STALE_ROUNDS,
    adopt_head,
    decision_target,
    only_revised_draft,
    producer_action,
    repin,
    stale_outcome,
    stale_request,
)


def _ref_id(ref_id: str, revision: int) -> str:
    return f"{ref_id}@{revision}"


def research(call: NodeCall) -> NodeResult:
    """Research: read sources, extract sourced facts, hand them to the Writer."""
    previous: Handoff | None = call.read("handoff")
    earlier: ResearchBundle | None = call.read("research")
    widen = earlier is not None and earlier.result_status == "failed" and not earlier.widened
    step = replace(call.step, widen=widen) if widen else call.step
    output = call.ctx.research.research(call.task, previous, call.ctx.store, step)
    bundle: ResearchBundle = call.accept("research", output.result)
    handoff = build_handoff(
        call.task,
        call.step,
        next_action="writer" if bundle.result_status != "failed" else "__end__",
        bundle=bundle,
        artifacts=list(bundle.artifact_refs),
        receipts=output.receipts,
        previous=previous,
        repin_sources=True,
    )
    written = [source.snapshot for source in bundle.sources] + list(bundle.artifact_refs)
    artifact_ids = [_ref_id(ref.artifact_id, ref.revision) for ref in written]
    return NodeResult(
        update={"research": bundle, "handoff": handoff, "freshness": None},
        usage=output.usage,
        artifact_ids=artifact_ids,
    )


def writer(call: NodeCall) -> NodeResult:
    """Writer: draft (or redraft) from facts only, addressing the last review."""
    handoff: Handoff = call.require("handoff")
    bundle: ResearchBundle = call.require("research")
    previous: DraftArticle | None = call.read("draft")
    review: ReviewResult | None = call.read("review")
    report, stop = _guard(call, bundle=bundle, handoff=handoff, draft=None)
    if stop is not None:
        return stop
    output = call.ctx.writer.write(
        task_in_force(call.task, handoff),
        handoff,
        bundle,
        previous,
        review,
        call.ctx.store,
        call.step,
    )
    draft: DraftArticle = call.accept("draft", output.result)
    next_handoff = build_handoff(
        call.task,
        call.step,
        next_action="reviewer",
        bundle=bundle,
        artifacts=[draft.body],
        receipts=output.receipts,
        previous=handoff,
    )
    return NodeResult(
        update={"draft": draft, "handoff": next_handoff, "freshness": report},
        usage=output.usage,
        artifact_ids=[_ref_id(draft.body.artifact_id, draft.body.revision)],
        checked_inputs=summary(report),
    )


def reviewer(call: NodeCall) -> NodeResult:
    """Reviewer: verify every citation against its source snapshot, and the constraints."""
    handoff: Handoff = call.require("handoff")
    bundle: ResearchBundle = call.require("research")
    draft: DraftArticle = call.require("draft")
    report, stop = _guard(call, bundle=bundle, handoff=handoff, draft=draft)
    if stop is not None:
        if not (only_revised_draft(report) and call.task.policies.on_stale == "reevaluate"):
            return stop
        draft = adopt_head(draft, call.ctx.store)  # a person's newer revision is what we review
        report, stop = _guard(call, bundle=bundle, handoff=handoff, draft=draft)
        if stop is not None:
            return stop
    output = call.ctx.reviewer.review(
        task_in_force(call.task, handoff), handoff, bundle, draft, call.ctx.store, call.step
    )
    review: ReviewResult = call.accept("review", output.result)
    artifacts = [draft.body] + ([review.report] if review.report else [])
    next_handoff = build_handoff(
        call.task,
        call.step,
        next_action="finalize" if review.verdict == "approved" else "writer",
        bundle=bundle,
        artifacts=artifacts,
        receipts=output.receipts,
        previous=handoff,
    )
    artifact_ids = (
        [_ref_id(review.report.artifact_id, review.report.revision)] if review.report else []
    )
    return NodeResult(
        update={"review": review, "handoff": next_handoff, "draft": draft, "freshness": report},
        usage=output.usage,
        artifact_ids=artifact_ids,
        checked_inputs=summary(report),
    )


def finalize(call: NodeCall) -> NodeResult:
    """Publish the approved draft as the article and record a completed outcome."""
    draft: DraftArticle = call.require("draft")
    review: ReviewResult = call.require("review")
    bundle: ResearchBundle = call.require("research")
    handoff: Handoff | None = call.read("handoff")
    report, stop = _guard(call, bundle=None, handoff=handoff, draft=draft)
    if stop is not None:
        if only_revised_draft(report) and call.task.policies.on_stale == "reevaluate" and handoff:
            # an unreviewed revision is never published: send it back to review
            adopted = adopt_head(draft, call.ctx.store)
            back = handoff.model_copy(update={"next_allowed_action": "reviewer"})
            return NodeResult(
                {"draft": adopted, "handoff": back, "freshness": report},
                Usage(),
                [],
                summary(report),
            )
        return stop
    if review.verdict != "approved" or review.draft_revision != draft.revision:
        raise ValueError(
            f"finalize needs an approved review of draft revision {draft.revision}; "
            f"got {review.verdict!r} for revision {review.draft_revision}"
        )
    body = call.ctx.store.get(draft.body)
    article = call.ctx.store.put(
        call.step.artifact_id("article"), "article", body, draft.body.media_type
    )
    call.step.fault("after_artifact")
    outcome = RunOutcome(
        thread_id=call.step.thread_id,
        task_id=call.task.task_id,
        state=TaskState.COMPLETED,
        result_status="completed",
        errors=list(bundle.errors),
        article=article,
        draft=draft.body,
        review_rounds=draft.revision,
        fact_count=len(bundle.facts),
    )
    return NodeResult(
        update={"outcome": outcome, "freshness": report},
        usage=Usage(),
        artifact_ids=[_ref_id(article.artifact_id, article.revision)],
        checked_inputs=summary(report),
    )


def conclude(call: NodeCall) -> NodeResult:
    """Record why a run ends without an approved article: failed research or review."""
    bundle: ResearchBundle | None = call.read("research")
    draft: DraftArticle | None = call.read("draft")
    review: ReviewResult | None = call.read("review")
    errors: list[ErrorDetail] = list(bundle.errors) if bundle else []
    if bundle is None or bundle.result_status == "failed" or not bundle.facts:
        if not errors:
            errors.append(
                ErrorDetail(
                    code=ErrorCode.INSUFFICIENT_EVIDENCE,
                    detail="research produced no usable facts",
                )
            )
        outcome = RunOutcome(
            thread_id=call.step.thread_id,
            task_id=call.task.task_id,
            state=TaskState.FAILED,
            result_status="failed",
            errors=errors,
            retryable=bundle.retryable if bundle else False,
            missing_inputs=list(bundle.missing_inputs) if bundle else [],
            fact_count=len(bundle.facts) if bundle else 0,
            reason=f"research failed: {errors[0].detail}",
        )
    elif review is not None and review.verdict == "rejected":
        errors.append(
            ErrorDetail(code=ErrorCode.REVIEW_REJECTED, detail="the reviewer rejected the draft")
        )
        outcome = RunOutcome(
            thread_id=call.step.thread_id,
            task_id=call.task.task_id,
            state=TaskState.FAILED,
            result_status="failed",
            errors=errors + [_change_error(change) for change in review.required_changes],
            draft=draft.body if draft else None,
            review_rounds=draft.revision if draft else 0,
            fact_count=len(bundle.facts),
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
        outcome = RunOutcome(
            thread_id=call.step.thread_id,
            task_id=call.task.task_id,
            state=TaskState.COMPLETED,
            result_status="partial",
            errors=errors + [_change_error(change) for change in pending],
            retryable=True,
            draft=draft.body if draft else None,
            review_rounds=rounds,
            fact_count=len(bundle.facts),
            reason="the draft was not approved within the review-round budget",
        )
    return NodeResult(update={"outcome": outcome}, usage=Usage(), artifact_ids=[])


def _change_error(change: RequiredChange) -> ErrorDetail:
    return ErrorDetail(code=change.code, detail=change.reason, claim_id=change.claim_id)


def approve_research(call: NodeCall) -> NodeResult:
    """Ask a person to approve (or revise, or reject) the research before writing.

    Everything before ``interrupt()`` is a pure function of state: this node re-runs from
    its start on every resume.
    """
    bundle: ResearchBundle = call.require("research")
    handoff: Handoff = call.require("handoff")
    request = approval_request(bundle, handoff, call.step, call.task.objective)
    decision, updated = ask(request, handoff, call.step)
    if decision.action == "reject":
        outcome = RunOutcome(
            thread_id=call.step.thread_id,
            task_id=call.task.task_id,
            state=TaskState.REJECTED,
            result_status="failed",
            errors=[ErrorDetail(code=ErrorCode.HUMAN_REJECTED, detail=decision.reason or "")],
            fact_count=len(bundle.facts),
            reason=decision.reason,
        )
        ended = updated.model_copy(update={"next_allowed_action": "__end__"})
        return NodeResult({"handoff": ended, "outcome": outcome}, Usage(), [])
    proceed = updated.model_copy(update={"next_allowed_action": "writer"})
    return NodeResult({"handoff": proceed}, Usage(), [])


def review_decision(call: NodeCall) -> NodeResult:
    """Ask a person what to do with a draft review could not approve within the budget."""
    draft: DraftArticle = call.require("draft")
    review: ReviewResult = call.require("review")
    handoff: Handoff = call.require("handoff")
    bundle: ResearchBundle = call.require("research")
    reason = (
        "the reviewer rejected it"
        if review.verdict == "rejected"
        else f"{draft.revision} review round(s) used"
    )
    request = review_request(
        reason=reason, draft_revision=draft.revision, handoff=handoff, step=call.step
    )
    decision, updated = ask(request, handoff, call.step)
    if decision.action == "grant_round":
        proceed = updated.model_copy(update={"next_allowed_action": "writer"})
        return NodeResult({"handoff": proceed}, Usage(), [])
    pending = [_change_error(change) for change in review.required_changes]
    if decision.action == "accept_partial":
        outcome = RunOutcome(
            thread_id=call.step.thread_id,
            task_id=call.task.task_id,
            state=TaskState.COMPLETED,
            result_status="partial",
            errors=pending,
            draft=draft.body,
            review_rounds=draft.revision,
            fact_count=len(bundle.facts),
            reason=f"accepted as partial by {decision.decided_by}",
        )
    else:
        outcome = RunOutcome(
            thread_id=call.step.thread_id,
            task_id=call.task.task_id,
            state=TaskState.CANCELED,
            result_status="failed",
            errors=[
                ErrorDetail(code=ErrorCode.HUMAN_ABORTED, detail=decision.reason or ""),
                *pending,
            ],
            draft=draft.body,
            review_rounds=draft.revision,
            fact_count=len(bundle.facts),
            reason=decision.reason,
        )
    ended = updated.model_copy(update={"next_allowed_action": "__end__"})
    return NodeResult({"handoff": ended, "outcome": outcome}, Usage(), [])


def _guard(
    call: NodeCall,
    *,
    bundle: ResearchBundle | None,
    handoff: Handoff | None,
    draft: DraftArticle | None,
) -> tuple[FreshnessReport, NodeResult | None]:
    """Check this consumer's inputs; return the result that stops it, or None to proceed."""
    report = check_inputs(
        call.step.node,
        store=call.ctx.store,
        probe=call.ctx.sources,
        bundle=bundle,
        handoff=handoff,
        draft=draft,
        previous=call.read("freshness"),
    )
    if report.verdict == "fresh":
        return report, None
    checked = summary(report)
    policy = call.task.policies.on_stale
    if report.verdict == "tampered" or policy == "fail" or report.round > MAX_STALE_ROUNDS:
        outcome = stale_outcome(call.task, call.step, report, call.read("draft"))
        return report, NodeResult({"freshness": report, "outcome": outcome}, Usage(), [], checked)
    if policy == "ask" or handoff is None:
        return report, NodeResult({"freshness": report}, Usage(), [], checked)
    back = handoff.model_copy(update={"next_allowed_action": producer_action(report)})
    return report, NodeResult({"freshness": report, "handoff": back}, Usage(), [], checked)


def stale_decision(call: NodeCall) -> NodeResult:
    """Ask a person what to do about changed inputs (policy ``ask``); consumes nothing."""
    report: FreshnessReport = call.require("freshness")
    handoff: Handoff = call.require("handoff")
    request = stale_request(report, call.step)
    decision, updated = ask(request, handoff, call.step)
    if decision.action == "abort":
        outcome = RunOutcome(
            thread_id=call.step.thread_id,
            task_id=call.task.task_id,
            state=TaskState.CANCELED,
            result_status="failed",
            errors=[ErrorDetail(code=ErrorCode.STALE_INPUT, detail=report.describe()[:2000])],
            reason=decision.reason,
        )
        return NodeResult({"handoff": updated, "outcome": outcome}, Usage(), [])
    update: dict[str, object] = {"freshness": None}
    if decision.action == "accept_new_revision":
        updated = repin(updated, report)
        draft: DraftArticle | None = call.read("draft")
        if draft is not None and only_revised_draft(report):
            update["draft"] = adopt_head(draft, call.ctx.store)
    update["handoff"] = updated.model_copy(
        update={"next_allowed_action": decision_target(report, decision)}
    )
    return NodeResult(update, Usage(), [])
