"""What a consumer does when its inputs are not the revisions it was handed.

Tampered inputs are refused under every policy. Otherwise the task's ``on_stale`` policy
decides: ``reevaluate`` routes back to the producer of the changed input (or, for a draft
a person revised, adopts that revision), ``fail`` ends the run with STALE_INPUT, ``ask``
pauses in its own node so nothing stale is consumed while a person decides.
"""

from __future__ import annotations

from contracts import (
    ArtifactRef,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    FreshnessReport,
    Handoff,
    HumanDecision,
    HumanRequest,
    NextAction,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs.markdown import cited_claims, word_count
from graphs.ports import ArtifactStore, StepInfo

MAX_STALE_ROUNDS = 3
"""Consecutive re-evaluations before giving up with STALE_INPUT (nothing loops forever)."""
CONSUMER_ACTION: dict[str, NextAction] = {
    "writer": "writer",
    "reviewer": "reviewer",
    "finalize": "finalize",
}


def stale_outcome(
    task: TaskSpec, step: StepInfo, report: FreshnessReport, draft: DraftArticle | None
) -> RunOutcome:
    """The recorded end of a run whose inputs cannot be used."""
    tampered = report.verdict == "tampered"
    code = ErrorCode.INTEGRITY_ERROR if tampered else ErrorCode.STALE_INPUT
    return RunOutcome(
        thread_id=step.thread_id,
        task_id=task.task_id,
        state=TaskState.FAILED,
        result_status="failed",
        errors=[ErrorDetail(code=code, detail=report.describe()[:2000])],
        missing_inputs=[check.name for check in report.problems() if check.status == "missing"],
        draft=draft.body if draft else None,
        review_rounds=draft.revision if draft else 0,
        reason=f"{step.node} refused its inputs: {report.describe()}"[:2000],
    )


def producer_action(report: FreshnessReport) -> NextAction:
    """Where to go back to: research for anything research produced, else the writer."""
    if any(check.producer == "research" for check in report.problems()):
        return "research"
    return "writer"


def only_revised_draft(report: FreshnessReport) -> bool:
    """True when the sole problem is a newer (intact) revision of the draft."""
    problems = report.problems()
    return bool(problems) and all(
        check.producer == "writer" and check.status == "stale" for check in problems
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


def stale_request(report: FreshnessReport, step: StepInfo) -> HumanRequest:
    """What a person is shown when policy ``ask`` meets changed inputs."""
    actions: list[str] = ["rerun_producer", "abort"]
    if not any(check.status == "missing" for check in report.problems()):
        actions.insert(0, "accept_new_revision")
    return HumanRequest.model_validate(
        {
            "interrupt_id": f"stale-input-s{step.step}",
            "request_kind": "stale_input",
            "question": f"Inputs of {report.node} changed since they were handed over. "
            "Accept the new revisions, re-run the step that produced them, or abort?",
            "allowed_actions": actions,
            "changes": [
                f"{check.name}: {check.status} (recorded {check.recorded_sha256[:12]}, now "
                f"{check.current_sha256[:12] if check.current_sha256 else 'gone'})"
                for check in report.problems()
            ],
        }
    )


def repin(handoff: Handoff, report: FreshnessReport) -> Handoff:
    """Accept the current hashes of changed source files as the new pins."""
    current = {
        check.uri: check.current_sha256
        for check in report.problems()
        if check.kind == "source" and check.status == "stale" and check.current_sha256
    }
    inputs = [
        item.model_copy(update={"sha256": current[item.uri]}) if item.uri in current else item
        for item in handoff.authoritative_inputs
    ]
    return handoff.model_copy(update={"authoritative_inputs": inputs})


def decision_target(report: FreshnessReport, decision: HumanDecision) -> NextAction:
    """Where an answered stale-input request continues."""
    if decision.action == "accept_new_revision":
        return CONSUMER_ACTION[report.node]
    return producer_action(report)
