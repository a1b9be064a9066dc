"""Budget accounting: what a thread has used, and whether the next step may start."""

from __future__ import annotations

from datetime import datetime

from contracts import BranchTask, Budget, ErrorCode, ErrorDetail, NodeRun, TaskSpec, Usage


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


def left(budget: Budget, runs: list[NodeRun]) -> tuple[int | None, int | None]:
    """Tool calls and tokens a step may still spend (None: unlimited)."""
    spent = used(runs)
    return (
        remaining(budget.max_tool_calls, spent.tool_calls),
        remaining(budget.max_tokens, spent.tokens),
    )


def branch_share(
    budget: Budget, runs: list[NodeRun], branch: BranchTask, own: tuple[str, str]
) -> tuple[int | None, int | None]:
    """What one of a fan-out's parallel tasks may spend: its share of what was left.

    What was left is judged from the audit before the fan-out (every run up to the last one
    of a node the fan-out did not start), never from siblings running beside it, so the
    share does not depend on which sibling finished first; the task's own earlier attempts
    (same node, same input) count against its share. Together the tasks never spend more
    than the budget had left.
    """
    fanned = set(branch.nodes) or {branch.node}
    start = max((i + 1 for i, run in enumerate(runs) if run.node_id not in fanned), default=0)
    before = used(runs[:start])
    mine = used([run for run in runs[start:] if (run.node_id, run.input_hash) == own])

    def share(limit: int | None, spent_before: int, spent_mine: int) -> int | None:
        if limit is None:
            return None
        return max(0, max(0, limit - spent_before) // branch.tasks - spent_mine)

    return (
        share(budget.max_tool_calls, before.tool_calls, mine.tool_calls),
        share(budget.max_tokens, before.tokens, mine.tokens),
    )
