"""Budget accounting: what a thread has used, and whether the next step may start."""

from __future__ import annotations

from datetime import datetime

from contracts import ErrorCode, ErrorDetail, NodeRun, TaskSpec, Usage


def used(runs: list[NodeRun]) -> Usage:
    """Total usage of every attempt so far, failed ones included (they cost too)."""
    return Usage(
        tool_calls=sum(run.usage.tool_calls for run in runs if not run.reused),
        tokens=sum(run.usage.tokens for run in runs if not run.reused),
    )


def exhausted(task: TaskSpec, usage: Usage, now: datetime) -> ErrorDetail | None:
    """Why no further step may start, or None while budget remains."""
    budget = task.budget
    if budget.deadline is not None and now >= budget.deadline:
        return ErrorDetail(
            code=ErrorCode.BUDGET_EXHAUSTED,
            detail=f"deadline {budget.deadline.isoformat()} has passed",
            field="budget.deadline",
        )
    if budget.max_tool_calls is not None and usage.tool_calls >= budget.max_tool_calls:
        return ErrorDetail(
            code=ErrorCode.BUDGET_EXHAUSTED,
            detail=f"{usage.tool_calls} of {budget.max_tool_calls} tool calls used",
            field="budget.max_tool_calls",
        )
    if budget.max_tokens is not None and usage.tokens >= budget.max_tokens:
        return ErrorDetail(
            code=ErrorCode.BUDGET_EXHAUSTED,
            detail=f"{usage.tokens} of {budget.max_tokens} tokens used",
            field="budget.max_tokens",
        )
    return None


def remaining(limit: int | None, spent: int) -> int | None:
    """What is left of one limit (None: unlimited)."""
    return None if limit is None else max(0, limit - spent)
