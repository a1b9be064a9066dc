"""What a node body gets and gives back: ``NodeCall`` in, ``NodeResult`` out.

A body reads only what its node declared (each read re-validated as its contract), asks
for its agent through the call, and returns its update with what it cost; the runner
validates, audits and hands over the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar, cast, get_args, get_type_hints

from contracts import ResultStatus, RunOutcome, TaskSpec, TaskState, ToolReceipt, Usage
from graphs.agents import CONTRIBUTED, TOOLS, AgentOutput, request_channels
from graphs.boundary import CheckedState, read, require, validate_channel
from graphs.context import RunContext
from graphs.declare import NodeSpec
from graphs.errors import ContractViolation, Omitted
from graphs.joins import branch_results, json_or_none
from graphs.outcomes import run_outcome
from graphs.ports import StepInfo
from graphs.tools import Toolbox, ToolEnv

RequestT = TypeVar("RequestT")


_STATE_FIELDS: dict[type[Any], tuple[tuple[str, str, bool], ...]] = {}


def state_fields(kind: type[Any]) -> tuple[tuple[str, str, bool], ...]:
    """A request type's fields read from state: (field, channel, admits None).

    Resolving a dataclass's type hints costs more than the rest of a request; a request
    type's fields never change, so they are resolved once per type.
    """
    found = _STATE_FIELDS.get(kind)
    if found is None:
        hints = get_type_hints(kind)
        found = _STATE_FIELDS[kind] = tuple(
            (name, channel, type(None) in get_args(hints[name]))
            for name, channel in request_channels(kind).items()
        )
    return found


_TAKES_TOOLS: dict[type[Any], bool] = {}


def takes_tools(kind: type[Any]) -> bool:
    """Whether a request type carries the node's tools to its agent (a ``tools`` field)."""
    found = _TAKES_TOOLS.get(kind)
    if found is None:
        found = _TAKES_TOOLS[kind] = TOOLS in {item.name for item in fields(kind)}
    return found


@dataclass
class NodeCall:
    """What a node body gets: its declared inputs, its agent, services, where it runs."""

    spec: NodeSpec
    state: CheckedState
    task: TaskSpec
    ctx: RunContext
    step: StepInfo
    nodes: Mapping[str, NodeSpec] = field(default_factory=dict)
    """Every node of the graph by name, as built (a node that reasons about another's work)."""
    merged: set[tuple[str, str]] = field(default_factory=set)
    """The (branch node, channel) pairs a join's body read (``branch_outputs``): what it
    did not read would be dropped (``graphs.joins.check_merged``)."""

    def read(self, channel: str) -> Any:
        """A channel the node declared it reads, as its contract (or None), re-validated."""
        return read(self.state, channel, self._input(channel).contract, node=self.spec.name)

    def require(self, channel: str) -> Any:
        """A declared input that must be present at this point of the flow."""
        return require(self.state, channel, self._input(channel).contract, node=self.spec.name)

    def request(self, kind: type[RequestT], **given: Any) -> RequestT:
        """The agent's request: each ``from_channel`` field read from state, unless given.

        A field whose type admits None is read; any other is required. ``given`` supplies
        the services (store, step) and any field the node derives itself. Channels other
        nodes declared this node's agent reads (``read_by``) arrive in ``inputs``.
        """
        if self.spec.contributed and CONTRIBUTED not in given:
            given[CONTRIBUTED] = {channel: self.read(channel) for channel in self.spec.contributed}
        values = {
            name: self.read(channel) if optional else self.require(channel)
            for name, channel, optional in state_fields(kind)
            if name not in given
        }
        return kind(**values, **given)

    def delegate(
        self, kind: type[RequestT], channel: str, **given: Any
    ) -> tuple[Any, AgentOutput[Any]]:
        """Run the node's agent and validate its result as ``channel``'s contract.

        The request is built as ``request`` builds it, with the run's artifact store and
        this step unless ``given`` names others, and, when the request has a ``tools``
        field, the node's tools (so a tool given to the node reaches its agent with no
        second place to name it). The output comes back beside the result for what it cost
        (``NodeResult.of_agent``).
        """
        given.setdefault("store", self.ctx.store)
        given.setdefault("step", self.step)
        if takes_tools(cast(type[Any], kind)):
            given.setdefault(TOOLS, self.tools)
        output: AgentOutput[Any] = self.agent.run(self.request(kind, **given))
        return self.accept(channel, output.result), output

    def branch_outputs(self, branch: NodeSpec, channel: str) -> list[tuple[str, Any]]:
        """A join's view of one channel of its branches: (key, contract) per branch.

        In the order the fan-out started them; every branch the fan-out starts from this
        state must have a result (a join never merges part of its branches silently).
        """
        if branch not in self.spec.joins:
            raise ContractViolation(
                f"node {self.spec.name!r} reads the branches of {branch.name!r}, which it "
                f"does not join; it joins {[spec.name for spec in self.spec.joins]}",
                node=self.spec.name,
                channel="branches",
                fields=["branches"],
            )
        self.merged.add((branch.name, channel))
        return [
            (
                key,
                validate_channel(
                    self.spec.name,
                    channel,
                    json_or_none(result.outputs.get(channel)),
                    branch.outputs,
                ),
            )
            for key, result in branch_results(self.spec, branch, self.state).items()
        ]

    def accept(self, channel: str, value: Any) -> Any:
        """An agent's result, validated as the channel's contract before anything uses it."""
        return validate_channel(self.spec.name, channel, value, self.spec.outputs)

    def outcome(self, state: TaskState, result_status: ResultStatus, **fields: Any) -> RunOutcome:
        """How this run ends, on this thread and task (see ``graphs.outcomes.run_outcome``)."""
        return run_outcome(self.task, self.step, state, result_status, **fields)

    @functools.cached_property
    def tools(self) -> Toolbox:
        """The tools this node declared, behind the boundary; one toolbox per attempt.

        Calls that run are charged against what the budget leaves this attempt; the
        runner adds them, with every call's receipt, to the attempt's result.
        """
        return Toolbox(
            node=self.spec.name,
            tools=self.spec.tools,
            env=ToolEnv(store=self.ctx.store, step=self.step, clock=self.ctx.clock),
            code=self.ctx.tools,
            budget=self.step.tool_calls_left,
            effects=self.ctx.ledger,
        )

    def opened_tools(self) -> Toolbox | None:
        """The toolbox, if the body asked for it (so a node without tools needs none)."""
        toolbox = self.__dict__.get("tools")
        return toolbox if isinstance(toolbox, Toolbox) else None

    @property
    def agent(self) -> Any:
        """The agent the app supplies for this node (declared by its protocol)."""
        return self.ctx.agent_for(self.spec)

    def _input(self, channel: str) -> Any:
        """The declared input ``channel``, or ``Omitted``: the declaration must change.

        Not a ContractViolation: no repair of the agent's output could make the read
        declared, so the first run that reaches it fails, naming the channel.
        """
        inputs = self.spec.inputs
        if channel not in inputs:
            raise Omitted(
                f"node {self.spec.name!r} reads {channel!r}, which its input schema "
                f"{self.spec.reads.__name__} does not declare; declared: {sorted(inputs)}; "
                f"add {channel!r} to {self.spec.reads.__name__}"
            )
        return inputs[channel]


@dataclass
class NodeResult:
    """A node body's state update plus what it cost and which tools it called."""

    update: dict[str, Any]
    usage: Usage = field(default_factory=Usage)
    artifact_ids: list[str] = field(default_factory=list)
    checked_inputs: list[str] = field(default_factory=list)
    receipts: list[ToolReceipt] = field(default_factory=list)
    note: str | None = None
    """Why this pass ran, for the audit (``NodeRun.note``), when it is not the obvious one."""
    refused: bool = False
    """The node refused its input (``note`` says why): see ``refusal``."""

    @classmethod
    def refusal(cls, why: str) -> NodeResult:
        """The node takes nothing from its input: the thread stays exactly as it was.

        Nothing is written and no envelope handed over; the attempt is audited as failed
        (``refused_input``, ``why``), never as the work done, and its result is never
        reused. The node's route must end the run (the runner checks it does).
        """
        return cls({}, note=why[:500], refused=True)

    @classmethod
    def of_agent(
        cls,
        output: AgentOutput[Any],
        update: dict[str, Any],
        *,
        artifact_ids: list[str],
        checked_inputs: list[str] | None = None,
        note: str | None = None,
    ) -> NodeResult:
        """The result of a node whose agent did the work: its usage and tool calls carried."""
        return cls(
            update,
            usage=output.usage,
            artifact_ids=artifact_ids,
            checked_inputs=checked_inputs or [],
            receipts=output.receipts,
            note=note,
        )
