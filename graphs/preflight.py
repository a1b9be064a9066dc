"""What a visit settles from the audit before its body may run: a replay, or a spent budget."""

from __future__ import annotations

import json
from typing import Any

from contracts import Handoff
from graphs.attempt_log import Attempt
from graphs.budget import exhausted
from graphs.declare import NodeResult
from graphs.visit import Visit


def reuse(visit: Visit) -> dict[str, Any] | None:
    """Replay the update a finished attempt with this very input recorded.

    The node finished, then the process died before the checkpoint: its work is not done
    twice. Or a revised task left the node's inputs as they were: its result holds. The
    envelope is made again from the state now (with the tool calls the work made), so it
    serves the task version in force, never the one the result was first made for.
    """
    stored = visit.ctx.ledger.result(visit.step.thread_id, visit.spec.name, visit.key)
    if stored is None:
        return None
    update = visit.validate(json.loads(stored))
    made: Handoff | None = update.pop("handoff", None)
    update = visit.hand_over(NodeResult(update, receipts=made.tool_receipts if made else []))
    Attempt(visit, visit.step).finish(reused=True)
    return update


def over_budget(visit: Visit) -> dict[str, Any] | None:
    """Stop before a step the budget no longer allows (terminal nodes and joins always run).

    A join merges work its branches already paid for: stopping it would lose their
    (partial) results, and the next node's step is where the spent budget stops the run.
    """
    if visit.spec.terminal or visit.spec.joins:
        return None
    problem = exhausted(visit.task, visit.tally.spent, visit.ctx.clock())
    if problem is None:
        return None
    Attempt(visit, visit.step).finish(error=("budget_exhausted", problem.detail))
    return visit.stop(visit.step, problem, retryable=False)
