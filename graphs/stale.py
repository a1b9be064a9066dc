"""What a consumer does when its inputs are not the revisions it was handed.

Tampered inputs are refused under every policy, by raising IntegrityError: the step is not
consumed and no outcome is recorded, so once the stored bytes are restored the thread
resumes where it stopped (or a person cancels it). Otherwise the task's ``on_stale`` policy
decides: ``reevaluate`` routes back to the producer of the changed input (or, for a draft
a person revised, adopts that revision), ``fail`` ends the run with STALE_INPUT, ``ask``
pauses in its own node so nothing stale is consumed while a person decides.
"""

from __future__ import annotations

from typing import Final

from contracts import (
    ArtifactRef,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    FreshnessReport,
    Handoff,
    HumanRequest,
    RefCheck,
    ResearchBundle,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs.errors import IntegrityError
from graphs.freshness import DRAFT, RESEARCH, check_inputs, summary
from graphs.human import pause_request
from graphs.markdown import cited_claims, word_count
from graphs.node_runner import NodeCall, NodeResult
from graphs.outcomes import run_outcome
from graphs.pauses import Pause
from graphs.ports import ArtifactStore, StepInfo

ACCEPT_NEW: Final = "accept_new_revision"
"""The stale-input pause's action that re-pins changed inputs at their new content (typed as
its ``Literal``, so a comparison with ``STALE_INPUT.chosen(...)`` is checked)."""
MAX_STALE_ROUNDS = 3
"""Consecutive re-evaluations before giving up with STALE_INPUT (nothing loops forever)."""


def stale_outcome(
    task: TaskSpec, step: StepInfo, report: FreshnessReport, draft: DraftArticle | None
) -> RunOutcome:
    """The recorded end of a run whose changed inputs cannot be used (policy or rounds)."""
    return run_outcome(
        task,
        step,
        TaskState.REJECTED,  # the workflow refused to go on with inputs it cannot trust
        "failed",
        draft=draft,
        errors=[ErrorDetail(code=ErrorCode.STALE_INPUT, detail=report.describe()[:2000])],
        missing_inputs=[check.name for check in report.problems() if check.status == "missing"],
        reason=f"{step.node} refused its inputs: {report.describe()}"[:2000],
    )


def research_changed(report: FreshnessReport) -> bool:
    """Something research produced (a source, a snapshot, its notes) is not as handed over."""
    return any(check.producer == RESEARCH for check in report.problems())


def only_revised_draft(report: FreshnessReport) -> bool:
    """True when the sole problem is a newer (intact) revision of the draft."""
    problems = report.problems()
    return bool(problems) and all(
        check.producer == DRAFT and check.status == "stale" for check in problems
    )


def adopt_head(draft: DraftArticle, store: ArtifactStore) -> DraftArticle:
    """The draft re-pinned to its artifact's current revision (a person's edit)."""
    head = store.head(draft.body.artifact_id)
    if head is None:
        return draft
    body = store.get(head).decode("utf-8", errors="replace")
    return draft.model_copy(
        update={
            "body": ArtifactRef.model_validate(head.model_dump()),
            "cited_claim_ids": cited_claims(body),
            "word_count": word_count(body),
        }
    )


def stale_request(pause: Pause, report: FreshnessReport, step: StepInfo) -> HumanRequest:
    """What a person is shown when policy ``ask`` meets changed inputs.

    A missing input has no new revision to accept, so that action is not offered then.
    """
    missing = any(check.status == "missing" for check in report.problems())
    return pause_request(
        pause,
        step,
        question=f"Inputs of {report.node} changed since they were handed over. "
        "Accept the new revisions, re-run the step that produced them, or abort?",
        allowed=[name for name in pause.names if not (missing and name == ACCEPT_NEW)],
        changes=[
            f"{check.name}: {check.status} (recorded {check.recorded_sha256[:12]}, now "
            f"{check.current_sha256[:12] if check.current_sha256 else 'gone'})"
            + (f": {check.detail}" if check.detail else "")
            for check in report.problems()
        ],
    )


def repins(report: FreshnessReport) -> list[RefCheck]:
    """The changed source files a person may accept at their current content."""
    return [
        check
        for check in report.problems()
        if check.kind == "source" and check.status == "stale" and check.current_sha256
    ]


def guard(
    call: NodeCall,
    *,
    bundle: ResearchBundle | None,
    handoff: Handoff | None,
    draft: DraftArticle | None,
) -> tuple[FreshnessReport, NodeResult | None]:
    """Check a consumer's inputs; return the result that stops it, or None to proceed.

    A stopped node records the report; where the run goes next (a person, the producer
    of the changed input, or the end) is the wiring's route over that report.
    """
    report = check_inputs(
        call.step.node,
        store=call.ctx.store,
        probe=call.ctx.sources,
        bundle=bundle,
        handoff=handoff,
        draft=draft,
        previous=call.read("freshness"),
        thread_id=call.step.thread_id,
    )
    if report.verdict == "fresh":
        return report, None
    if report.verdict == "tampered":
        raise IntegrityError(
            f"{call.step.node} refused its inputs: {report.describe()}; nothing was consumed "
            "and the thread waits at this step: restore the stored bytes and resume it, "
            "or end it deliberately (cancel)"
        )
    checked = summary(report)
    policy = call.task.policies.on_stale
    if policy == "fail" or report.round > MAX_STALE_ROUNDS:
        outcome = stale_outcome(call.task, call.step, report, draft)
        return report, NodeResult({"freshness": report, "outcome": outcome}, checked_inputs=checked)
    return report, NodeResult({"freshness": report}, checked_inputs=checked)
