"""Ask a person what to do about changed inputs (policy ``ask``); consumes nothing stale."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from contracts import (
    DecisionLog,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    FreshnessReport,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs.declare import node
from graphs.human import ask, recorded
from graphs.node_runner import NodeCall, NodeResult
from graphs.pauses import Action, Pause
from graphs.stale import ACCEPT_NEW, adopt_head, only_revised_draft, repins, stale_request

StaleInputAction = Literal["accept_new_revision", "rerun_producer", "abort"]
STALE_INPUT: Pause[StaleInputAction] = Pause(
    "stale_input",
    actions=(
        Action(ACCEPT_NEW, inbox=("accept",)),
        Action("rerun_producer", inbox=("response",)),
        Action("abort", needs=("reason",), inbox=("ignore",)),
    ),
    literal=StaleInputAction,
)
"""Accept changed inputs at their new revisions, re-run their producer, or abort."""


class StaleDecisionInput(TypedDict):
    """The report of what changed, and the draft a person may have revised."""

    task: TaskSpec
    freshness: FreshnessReport | None
    draft: DraftArticle | None
    decisions: DecisionLog | None


class StaleDecisionOutput(TypedDict, total=False):
    """The decision (with re-pins when new revisions are accepted); the end on abort."""

    decisions: DecisionLog | None
    draft: DraftArticle | None
    outcome: RunOutcome | None


@node("stale_decision", reads=StaleDecisionInput, writes=StaleDecisionOutput, pauses=STALE_INPUT)
def stale_decision(call: NodeCall) -> NodeResult:
    """Accept the new revisions, re-run their producer, or abort; the route follows it."""
    report: FreshnessReport = call.require("freshness")
    request = stale_request(STALE_INPUT, report, call.step)
    decision = ask(STALE_INPUT, request)
    chosen = STALE_INPUT.chosen(decision)
    accepted = chosen == ACCEPT_NEW
    log = recorded(
        call.read("decisions"),
        decision,
        request,
        call.step,
        repins(report) if accepted else [],
    )
    if chosen == "abort":
        outcome = call.outcome(
            TaskState.CANCELED,
            "failed",
            errors=[ErrorDetail(code=ErrorCode.STALE_INPUT, detail=report.describe()[:2000])],
            reason=decision.reason,
        )
        return NodeResult({"decisions": log, "outcome": outcome})
    update: dict[str, object] = {"decisions": log}
    draft: DraftArticle | None = call.read("draft")
    if accepted and draft is not None and only_revised_draft(report):
        update["draft"] = adopt_head(draft, call.ctx.store)
    return NodeResult(update)
