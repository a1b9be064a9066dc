"""One execution of a node by LangGraph: what every step of the runner works from.

A visit knows the node, the state it was handed (with the run's choices in force), where
it runs and its input hash. It validates what the node returns and hands it over: the
update plus the envelope for the node the route picks next, derived from the state that
node will see, so the envelope always names the node that actually runs next.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.graph import END

from contracts import (
    BranchTask,
    DraftArticle,
    ErrorDetail,
    RunOutcome,
    TaskSpec,
    TaskState,
)
from graphs.boundary import CheckedState, read, validate_channel
from graphs.budget import Tally, fanned_by
from graphs.channels import channels_of
from graphs.context import RunContext
from graphs.declare import NodeCall, NodeResult, NodeSpec
from graphs.errors import ContractViolation
from graphs.handoffs import derive_handoff
from graphs.joins import check_merged, joined_handoff
from graphs.outcomes import run_outcome
from graphs.ports import StepInfo
from graphs.state import RunnerWrites

Router = Callable[[Mapping[str, Any]], str | tuple[str, ...]]
"""Where the run goes from a state: a node's name, or the names of branch nodes to start."""
RUNNER_CHANNELS = channels_of(RunnerWrites)
"""Channels the runner itself may write for any node: the envelope, a stop outcome, and
the task when the run's choices changed it."""


@dataclass
class Visit:
    """One execution of a node: what each step of the runner works from."""

    spec: NodeSpec
    route: Router
    state: CheckedState
    task: TaskSpec
    ctx: RunContext
    step: StepInfo
    key: str
    agent: str | None
    inputs: Mapping[str, str] = field(default_factory=dict)
    """The digest of each input the key covers (``graphs.input_hash.input_digests``)."""
    branch: BranchTask | None = None
    """The branch a fanned-out task runs (its key, and how many tasks share the budget)."""
    nodes: Mapping[str, NodeSpec] = field(default_factory=dict)
    """Every node of the graph by name: the handoff states the next one's limits."""

    @functools.cached_property
    def tally(self) -> Tally:
        """The thread's audit as the visit began, summed for it (budget, attempt count)."""
        return self.recount()

    def recount(self) -> Tally:
        """The audit summed for this visit now; the ledger adds it up, no row is read here."""
        fanned = fanned_by(self.branch) if self.branch is not None else ()
        return self.ctx.ledger.tally(self.step.thread_id, self.spec.name, self.key, fanned)

    def call(self, step: StepInfo) -> NodeCall:
        """The body's view of this visit at one attempt."""
        return NodeCall(
            spec=self.spec,
            state=self.state,
            task=self.task,
            ctx=self.ctx,
            step=step,
            nodes=self.nodes,
        )

    def validate(self, update: Mapping[str, Any]) -> dict[str, Any]:
        """The update, each channel checked against what this node (or the runner) writes."""
        allowed = {**self.spec.outputs, **RUNNER_CHANNELS}
        return {
            channel: validate_channel(self.spec.name, channel, value, allowed)
            for channel, value in update.items()
        }

    def perform(self, call: NodeCall) -> tuple[NodeResult, dict[str, Any]]:
        """Run the body: its result, with the tool calls it made, and the update handed over."""
        result = call.spec.body(call)
        if call.spec.joins and not result.refused:
            check_merged(call.spec, self.state, call.merged)
        toolbox = call.opened_tools()
        if toolbox is not None:  # this attempt's tool calls: receipts first, their cost added
            result = replace(
                result,
                usage=toolbox.charged(result.usage),
                receipts=[*toolbox.receipts, *result.receipts],
            )
        return result, self.hand_over(result)

    def hand_over(self, result: NodeResult) -> dict[str, Any]:
        """The validated update plus the envelope for the node the route picks next.

        A refusal hands nothing over (``NodeResult.refusal``): its route must end the run.
        """
        if result.refused:
            target = self.route(self.state)
            if target != END:
                raise ContractViolation(
                    f"node {self.spec.name!r} refused its input ({result.note}) but its route "
                    f"goes on to {target!r}: a refusal must end the run",
                    node=self.spec.name,
                    channel="handoff",
                    fields=["next_allowed_action"],
                )
            return {}
        update = self.validate(result.update)
        after = self.state.updated(update)
        target = self.route(after)
        first = target if isinstance(target, str) else target[0]
        names = (target,) if isinstance(target, str) else target
        handoff = derive_handoff(
            after,
            producer=self.step,
            next_node=first,
            receipts=result.receipts,
            next_specs=[self.nodes[name] for name in names if name != END],
        )
        if not isinstance(target, str):  # branch nodes of several kinds, side by side
            handoff = handoff.model_copy(update={"next_nodes": list(target)})
        if self.spec.joins:
            handoff = joined_handoff(self.spec, self.state, handoff)
        update["handoff"] = handoff
        return update

    def stop(self, step: StepInfo, error: ErrorDetail, *, retryable: bool) -> dict[str, Any]:
        """The run stops here, with ``error``: the outcome handed over as the update."""
        outcome = stop_outcome(self.state, self.task, step, error, retryable=retryable)
        return self.hand_over(NodeResult({"outcome": outcome}))


def stop_outcome(
    state: Mapping[str, Any],
    task: TaskSpec,
    step: StepInfo,
    error: ErrorDetail,
    *,
    retryable: bool,
) -> RunOutcome:
    """The outcome of a run that must stop here: partial if a draft exists, else failed."""
    draft = read(state, "draft", DraftArticle, node=step.node)
    partial = draft is not None
    return run_outcome(
        task,
        step,
        TaskState.COMPLETED if partial else TaskState.FAILED,
        "partial" if partial else "failed",
        draft=draft,
        errors=[error],
        retryable=retryable,
        reason=f"stopped at {step.node}: {error.detail}",
    )
