"""Pure routers: functions of contract fields, with impossible input refused loudly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from langgraph.graph import END

from contracts import DraftArticle, ErrorCode, ResearchBundle, ReviewResult, RunOutcome, TaskSpec
from graphs.boundary import read, require

STOP: Literal["__end__"] = "__end__"
assert STOP == END


def stopped(state: Mapping[str, Any]) -> bool:
    """A node recorded an outcome (budget spent, retries exhausted): the run ends now."""
    return read(state, "outcome", RunOutcome, node="router") is not None


def route_after_research(
    state: Mapping[str, Any],
) -> Literal["writer", "research", "conclude", "__end__"]:
    """Facts → Writer; too little evidence → one widened retry; otherwise end."""
    if stopped(state):
        return STOP
    bundle = require(state, "research", ResearchBundle, node="route_after_research")
    if bundle.facts and bundle.result_status != "failed":
        return "writer"
    too_little = any(error.code == ErrorCode.INSUFFICIENT_EVIDENCE for error in bundle.errors)
    if too_little and not bundle.widened:
        return "research"
    return "conclude"


def route_after_writer(state: Mapping[str, Any]) -> Literal["reviewer", "__end__"]:
    """A draft goes to review unless the writer's step ended the run."""
    return STOP if stopped(state) else "reviewer"


def route_after_review(
    state: Mapping[str, Any],
) -> Literal["writer", "finalize", "conclude", "__end__"]:
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
    if review.verdict == "changes_requested" and draft.revision < task.budget.max_review_rounds:
        return "writer"
    return "conclude"
