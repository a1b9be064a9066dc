"""Parallel branches and their join, as the node runner sees them.

A branch node's update (its outputs, envelope or stop outcome) is kept under its own key in
the ``branches`` channel (``as_branch_result``), so tasks of one step never write the same
channel. A join first looks at its branches (``stopped_outcome``): one that had to stop
ends the run with that branch's own errors; otherwise the join runs like any node, its
envelope lists every branch (``joined_handoff``), and its update drops the results it
merged from the channel (``consumed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from contracts import (
    BranchResult,
    BranchResults,
    BranchTask,
    Handoff,
    JoinedBranch,
    RunOutcome,
)
from graphs.declare import NodeSpec, branch_results
from graphs.errors import Omitted


def stopped_outcome(join: NodeSpec, state: Mapping[str, Any]) -> RunOutcome | None:
    """The outcome a join ends the run with when one of its branches had to stop.

    Every branch that stopped contributes its errors, in fan-out order; the first one's
    reason is the run's. The join's own work does not run: it would merge a part.
    """
    stops = [
        result.outcome
        for branch in join.joins
        for result in branch_results(join, branch, state).values()
        if result.outcome is not None
    ]
    if not stops:
        return None
    return stops[0].model_copy(
        update={
            "errors": [error for stop in stops for error in stop.errors],
            "retryable": all(stop.retryable for stop in stops),
        }
    )


def joined_handoff(spec: NodeSpec, state: Mapping[str, Any], handoff: Handoff) -> Handoff:
    """A join's envelope lists every branch it waited for, with its inputs and receipts."""
    joined = [
        JoinedBranch(
            node=branch.name,
            key=key,
            authoritative_inputs=result.handoff.authoritative_inputs,
            artifacts=result.handoff.artifacts,
            tool_receipts=result.handoff.tool_receipts,
        )
        for branch in spec.joins
        for key, result in branch_results(spec, branch, state).items()
    ]
    receipts = [receipt for item in joined for receipt in item.tool_receipts]
    return handoff.model_copy(
        update={"branches": joined, "tool_receipts": [*receipts, *handoff.tool_receipts]}
    )


def as_branch_result(
    spec: NodeSpec, branch: BranchTask, input_hash: str, update: dict[str, Any]
) -> dict[str, Any]:
    """A branch's update, kept under its own key in the ``branches`` channel.

    Branches of one step run side by side; had each written ``research`` or ``handoff``
    itself, LangGraph would refuse the second write of the step (or keep one of them).
    """
    outputs = {
        channel: value.model_dump_json()
        for channel, value in sorted(update.items())
        if channel in spec.outputs and isinstance(value, BaseModel)
    }
    said = [
        value.summary()
        for channel, value in sorted(update.items())
        if channel in outputs and callable(getattr(value, "summary", None))
    ]
    result = BranchResult(
        node=spec.name,
        key=branch.key,
        input_hash=input_hash,
        outputs=outputs,
        summary="; ".join(said)[:500],
        handoff=update["handoff"],
        outcome=update.get("outcome"),
    )
    return {"branches": BranchResults(results=[result])}


def check_merged(join: NodeSpec, state: Mapping[str, Any], merged: set[tuple[str, str]]) -> None:
    """A join's body read every output its branches produced (else ``Omitted``).

    The join's update takes the branches' results out of the state (``consumed``): an
    output its body never asked for (``NodeCall.branch_outputs``) would be gone, and the
    run would go on as if that branch had not run.
    """
    dropped = sorted(
        (branch.name, channel)
        for branch in join.joins
        for result in branch_results(join, branch, state).values()
        for channel in result.outputs
        if (branch.name, channel) not in merged
    )
    if dropped:
        branch, channel = dropped[0]
        raise Omitted(
            f"join {join.name!r} drops the {channel!r} output of branch {branch!r}: its body "
            f"never reads it, and the join takes the branches' results out of the state; "
            f"merge it with call.branch_outputs({branch}, {channel!r}) "
            f"(dropped: {sorted(set(dropped))})"
        )


def consumed(join: NodeSpec, update: dict[str, Any]) -> dict[str, Any]:
    """A join's update, which takes the branches' results it merged out of the state."""
    merged = [branch.name for branch in join.joins]
    return {**update, "branches": BranchResults(results=[], consumed=merged)}
