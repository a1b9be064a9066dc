"""Pure routers: functions of contract fields, with impossible input refused loudly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from langgraph.graph import END

from contracts import (
    DraftArticle,
    ErrorCode,
    FreshnessReport,
    Handoff,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
)
from graphs.boundary import read, require

STOP: Literal["__end__"] = "__end__"
assert STOP == END


def stopped(state: Mapping[str, Any]) -> bool:
    """A node recorded an outcome (budget spent, retries exhausted): the run ends now."""
    return read(state, "outcome", RunOutcome, node="router") is not None


def needs_approval(task: TaskSpec, bundle: ResearchBundle) -> bool:
    """A person approves research when the policy says so or questions are still open."""
    return task.policies.require_approval or bool(bundle.open_questions)


def route_after_research(
    state: Mapping[str, Any],
) -> Literal["writer", "approve_research", "research", "conclude", "__end__"]:
    """Facts → Writer; too little evidence → one widened retry; otherwise end."""
    if stopped(state):
        return STOP
    bundle = require(state, "research", ResearchBundle, node="route_after_research")
    if bundle.facts and bundle.result_status != "failed":
        task = require(state, "task", TaskSpec, node="route_after_research")
        return "approve_research" if needs_approval(task, bundle) else "writer"
    too_little = any(error.code == ErrorCode.INSUFFICIENT_EVIDENCE for error in bundle.errors)
    if too_little and not bundle.widened:
        return "research"
    return "conclude"


Resumption = Literal["research", "writer", "reviewer", "finalize", "stale_decision", "__end__"]
ACTION_NODE: dict[str, Resumption] = {
    "research": "research",
    "writer": "writer",
    "reviewer": "reviewer",
    "finalize": "finalize",
}


def refused_inputs(state: Mapping[str, Any], node: str) -> bool:
    """The node found its inputs changed and did not consume them."""
    report = read(state, "freshness", FreshnessReport, node="router")
    return report is not None and report.node == node and report.verdict != "fresh"


def route_stale(state: Mapping[str, Any]) -> Resumption:
    """Changed inputs: ask a person (policy ask) or go where the handoff now points."""
    task = require(state, "task", TaskSpec, node="route_stale")
    if task.policies.on_stale == "ask":
        return "stale_decision"
    return route_by_handoff(state)


def route_by_handoff(state: Mapping[str, Any]) -> Resumption:
    """Continue with the one action the handoff allows (or end)."""
    if stopped(state):
        return STOP
    handoff = require(state, "handoff", Handoff, node="route_by_handoff")
    if handoff.next_allowed_action not in ACTION_NODE:
        raise ValueError(f"handoff allows {handoff.next_allowed_action!r}; no node continues it")
    return ACTION_NODE[handoff.next_allowed_action]


def route_after_decision(state: Mapping[str, Any]) -> Literal["writer", "__end__"]:
    """After a human decision: write (approved, revised, round granted) or end."""
    return STOP if stopped(state) else "writer"


def route_after_writer(state: Mapping[str, Any]) -> Resumption | Literal["reviewer"]:
    """A draft goes to review unless the writer's step ended the run or refused its inputs."""
    if stopped(state):
        return STOP
    if refused_inputs(state, "writer"):
        return route_stale(state)
    return "reviewer"


def route_after_finalize(state: Mapping[str, Any]) -> Resumption:
    """Finalize ends the run, unless its input changed and must be reviewed again."""
    if stopped(state) or not refused_inputs(state, "finalize"):
        return STOP
    return route_stale(state)


def route_after_review(
    state: Mapping[str, Any],
) -> Resumption | Literal["review_decision", "conclude"]:
    """Approved → finalize; changes with rounds left → writer; otherwise end."""
    if stopped(state):
        return STOP
    if refused_inputs(state, "reviewer"):
        return route_stale(state)
    task = require(state, "task", TaskSpec, node="route_after_review")
    draft = require(state, "draft", DraftArticle, node="route_after_review")
    review = require(state, "review", ReviewResult, node="route_after_review")
    if review.draft_revision != draft.revision:
        raise ValueError(
            f"review is for draft revision {review.draft_revision}, "
            f"but the current draft is revision {draft.revision}"
        )
    if review.verdict == "approved":
        return "finalize"
    handoff = read(state, "handoff", Handoff, node="route_after_review")
    rounds = task.budget.max_review_rounds + (handoff.granted_review_rounds if handoff else 0)
    if review.verdict == "changes_requested" and draft.revision < rounds:
        return "writer"
    return "review_decision" if task.policies.on_review_exhausted == "ask" else "conclude"
