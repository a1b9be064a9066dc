"""Budget accounting: what a thread has used, and whether the next step may start.

The node runner never reads the audit row by row: the ledger sums it for the visit
(``RunLedger.tally``), so a node's start does not validate a record per attempt the thread
made before. ``tally_of`` says what that sum is, over records in hand; the in-memory
ledger uses it and the tests hold the databases' queries to it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from contracts import BranchTask, Budget, ErrorCode, ErrorDetail, NodeRun, TaskSpec, Usage

CHARS_PER_TOKEN = 4
"""Characters per token of the estimate a model call is charged when it reports no usage."""


def estimated_tokens(characters: int) -> int:
    """Tokens charged for ``characters`` of prompt and reply a model reported no usage for.

    Four characters a token, rounded up: what OpenAI's tokenizers average on English text.
    LangChain's own count (``get_num_tokens``) needs ``transformers`` and downloads GPT-2's
    tokenizer, so it is not used; the estimate is marked as one (``Usage.estimated_tokens``).
    """
    return -(-characters // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Tally:
    """The thread's audit summed for one visit of a node (reused attempts cost nothing).

    ``before_fan_out`` and ``own_since`` split the spend at the last attempt of a node
    outside the fan-out the visit belongs to (no fan-out: everything is before it).
    """

    spent: Usage = field(default_factory=Usage)
    """By every attempt of the thread, failed ones included (they cost too)."""
    attempts: int = 0
    """Attempts of this node on this input so far, whatever became of them."""
    before_fan_out: Usage = field(default_factory=Usage)
    """By the attempts up to the last one of a node the fan-out did not start."""
    own_since: Usage = field(default_factory=Usage)
    """By this node on this input after that: a branch task's own earlier attempts."""


def used(runs: Sequence[NodeRun]) -> Usage:
    """Total usage of every attempt so far, failed ones included (they cost too)."""
    return Usage(
        tool_calls=sum(run.usage.tool_calls for run in runs if not run.reused),
        tokens=sum(run.usage.tokens for run in runs if not run.reused),
    )


def tally_of(
    runs: Sequence[NodeRun], node_id: str, input_hash: str, fanned: Collection[str] = ()
) -> Tally:
    """The tally of a thread's records, oldest first, for a visit of ``node_id``."""
    start = max((i + 1 for i, run in enumerate(runs) if run.node_id not in fanned), default=0)
    own = (node_id, input_hash)
    mine = [i for i, run in enumerate(runs) if (run.node_id, run.input_hash) == own]
    return Tally(
        spent=used(runs),
        attempts=len(mine),
        before_fan_out=used(runs[:start]),
        own_since=used([runs[i] for i in mine if i >= start]),
    )


def overrun(usage: Usage, tool_calls_left: int | None, tokens_left: int | None) -> Usage | None:
    """What ``usage`` spent beyond what was left (None: a limit), or None if nothing.

    A step may only start while budget is left, but what it then spends is known only once
    it ends: an agent's model can answer with more tokens than were left. The attempt is
    charged all it spent; this is what its audit row records it overran by.
    """
    over = Usage(
        tool_calls=max(0, usage.tool_calls - tool_calls_left) if tool_calls_left is not None else 0,
        tokens=max(0, usage.tokens - tokens_left) if tokens_left is not None else 0,
    )
    return over if over.tool_calls or over.tokens else None


def fanned_by(branch: BranchTask) -> tuple[str, ...]:
    """The branch nodes the fan-out that started this task started."""
    return tuple(branch.nodes) or (branch.node,)


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


def left(budget: Budget, spent: Usage) -> tuple[int | None, int | None]:
    """Tool calls and tokens a step may still spend (None: unlimited)."""
    return (
        remaining(budget.max_tool_calls, spent.tool_calls),
        remaining(budget.max_tokens, spent.tokens),
    )


def branch_share(budget: Budget, tally: Tally, tasks: int) -> tuple[int | None, int | None]:
    """What one of a fan-out's ``tasks`` parallel tasks may spend: its share of what was left.

    What was left is judged from the audit before the fan-out (every run up to the last one
    of a node the fan-out did not start), never from siblings running beside it, so the
    share does not depend on which sibling finished first; the task's own earlier attempts
    (same node, same input) count against its share. Together the tasks never spend more
    than the budget had left.
    """

    def share(limit: int | None, spent_before: int, spent_mine: int) -> int | None:
        if limit is None:
            return None
        return max(0, max(0, limit - spent_before) // tasks - spent_mine)

    before, mine = tally.before_fan_out, tally.own_since
    return (
        share(budget.max_tool_calls, before.tool_calls, mine.tool_calls),
        share(budget.max_tokens, before.tokens, mine.tokens),
    )
