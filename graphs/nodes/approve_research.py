"""Ask a person to approve (or revise, or reject) the research before writing starts."""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from contracts import (
    DecisionLog,
    ErrorCode,
    ErrorDetail,
    Handoff,
    ResearchBundle,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs.declare import node
from graphs.human import approval_request, ask, recorded
from graphs.node_runner import NodeCall, NodeResult
from graphs.pauses import Action, Pause

ApprovalAction = Literal["approve", "revise", "reject"]
APPROVAL: Pause[ApprovalAction] = Pause(
    "approve_research",
    actions=(
        Action("approve", takes=("answers", "constraints"), inbox=("accept", "edit")),
        Action(
            "revise", takes=("answers", "constraints"), inbox=("response",), text_as="constraints"
        ),
        Action("reject", needs=("reason",), inbox=("ignore",)),
    ),
    literal=ApprovalAction,
)
"""Approve the research, revise it (answer open questions, add constraints), or reject it.

In Agent Inbox: accept approves, edit approves with the answers and constraints given, a
response revises with its text as a constraint, ignore rejects."""


class ApprovalInput(TypedDict):
    """The research to approve, and the envelope with its open questions."""

    task: TaskSpec
    handoff: Handoff | None
    research: ResearchBundle | None
    decisions: DecisionLog | None


class ApprovalOutput(TypedDict, total=False):
    """The decision, recorded; the end if it was a rejection."""

    decisions: DecisionLog | None
    outcome: RunOutcome | None


@node("approve_research", reads=ApprovalInput, writes=ApprovalOutput, pauses=APPROVAL)
def approve_research(call: NodeCall) -> NodeResult:
    """Approve, revise (answers, constraints) or reject the research.

    Everything before ``interrupt()`` is a pure function of state: the node re-runs from
    its start on every resume.
    """
    bundle: ResearchBundle = call.require("research")
    request = approval_request(
        APPROVAL, bundle, call.read("handoff"), call.step, call.task.objective
    )
    decision = ask(APPROVAL, request)
    log = recorded(call.read("decisions"), decision, request, call.step)
    if APPROVAL.chosen(decision) != "reject":
        return NodeResult({"decisions": log})
    outcome = call.outcome(
        TaskState.REJECTED,
        "failed",
        bundle=bundle,
        errors=[ErrorDetail(code=ErrorCode.HUMAN_REJECTED, detail=decision.reason or "")],
        reason=decision.reason,
    )
    return NodeResult({"decisions": log, "outcome": outcome})
