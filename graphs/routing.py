"""Pure routers: functions of contract fields, with impossible input refused loudly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from contracts import DraftArticle, ResearchBundle, ReviewResult, TaskSpec
from graphs.boundary import require


def route_after_research(state: Mapping[str, Any]) -> Literal["writer", "conclude"]:
    """Failed research ends the run; anything with facts goes to the Writer."""
    bundle = require(state, "research", ResearchBundle, node="route_after_research")
    if bundle.result_status == "failed" or not bundle.facts:
        return "conclude"
    return "writer"


def route_after_review(state: Mapping[str, Any]) -> Literal["writer", "finalize", "conclude"]:
    """Approved → finalize; changes with rounds left → writer; otherwise end."""
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
