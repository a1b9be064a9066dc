"""Running a node's body: attempts with retries and one repair, or a pause asked once.

Every attempt is on record before its work starts and finished however it ends: a
transient failure is retried with doubling backoff, invalid agent output gets its repairs,
both up to the task's ``max_attempts``; what is left over stops the run with the error.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langgraph.errors import GraphBubbleUp

from contracts import ErrorCode, ErrorDetail, Usage
from graphs.attempt_log import Attempt
from graphs.budget import branch_share, left
from graphs.errors import ContractViolation, TransientError
from graphs.visit import Visit

MAX_BACKOFF_SECONDS = 5.0


def pause(visit: Visit) -> dict[str, Any]:
    """Run a node that asks a person; its attempt is written once the answer is in.

    Such a node re-runs from its start on every resume, so it records nothing before the
    decision arrives (the ``interrupt()`` inside the body raises until then).
    """
    with visit.ctx.store.batch():
        result, update = visit.perform(visit.call(visit.step))
    Attempt(visit, visit.step).finish(result, update=update)
    return update


def attempts(visit: Visit) -> dict[str, Any]:
    """Run the body until it succeeds, or its retries or repairs run out."""
    spec, ctx, task = visit.spec, visit.ctx, visit.task
    rules = spec.retry
    tally = visit.tally
    attempt = 1 + tally.attempts
    repairs = rules.repairs if rules else 0
    first = attempt
    while True:
        if attempt > first:  # the visit's failed attempts are in the audit now
            tally = visit.recount()
        if visit.branch is not None:
            calls, tokens = branch_share(task.budget, tally, visit.branch.tasks)
        else:
            calls, tokens = left(task.budget, tally.spent)
        step = replace(visit.step, attempt=attempt, tool_calls_left=calls, tokens_left=tokens)
        call = visit.call(step)
        current = Attempt(visit, step, call)
        try:
            with ctx.store.batch():  # the attempt's puts, durable before its row names them
                result, update = visit.perform(call)
        except TransientError as error:
            current.finish(usage=_spent(error), error=("transient", error.message))
            if rules and rules.transient and attempt < task.budget.max_attempts:
                ctx.sleep(min(MAX_BACKOFF_SECONDS, ctx.backoff_seconds * 2 ** (attempt - 1)))
                attempt += 1
                continue
            detail = ErrorDetail(
                code=ErrorCode.TRANSIENT,
                detail=f"{spec.name} failed {attempt} times: {error.message}"[:2000],
            )
            return visit.stop(step, detail, retryable=True)
        except ContractViolation as error:
            current.finish(usage=_spent(error), error=("invalid_output", error.message))
            if repairs > 0 and attempt < task.budget.max_attempts:
                repairs -= 1
                attempt += 1
                continue
            detail = ErrorDetail(
                code=ErrorCode.INVALID_OUTPUT,
                detail=error.message[:2000],
                field=error.fields[0] if error.fields else None,
            )
            return visit.stop(step, detail, retryable=False)
        except GraphBubbleUp:
            current.finish_waiting()
            raise
        except BaseException as error:
            current.finish(error=("internal", f"{type(error).__name__}: {error}"))
            raise
        current.finish(result, update=update)
        return update


def _spent(error: BaseException) -> Usage | None:
    """What a failed attempt had already consumed (agents attach it to their errors)."""
    usage = getattr(error, "usage", None)
    return usage if isinstance(usage, Usage) else None
