"""Pure routers: functions of contract fields, with impossible input refused loudly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from langgraph.graph import END

from contracts import (
    DraftArticle,
    ErrorCode,
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


def route_after_decision(state: Mapping[str, Any]) -> Literal["writer", "__end__"]:
    """After a human decision: write (approved, revised, round granted) or end."""
    return STOP if stopped(state) else "writer"


def route_after_writer(state: Mapping[str, Any]) -> Literal["reviewer", "__end__"]:
    """A draft goes to review unless the writer's step ended the run."""
    return STOP if stopped(state) else "reviewer"


def route_after_review(
    state: Mapping[str, Any],
) -> Literal["writer", "finalize", "review_decision", "conclude", "__end__"]:
    """Approved → finalize; changes with rounds left → writer; otherwise end."""
    if stopped(state):
        return STOP
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
