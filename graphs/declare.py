"""A node as its author writes it: its declaration, what its body gets and gives back.

A node is declared once, in its own module, with :func:`node`. The graph builder, the
input hash, the audit, fault points and the app's agent lookup all read the declaration;
nothing else lists node names or the channels a node touches. Its body gets a ``NodeCall``
(its declared inputs, each re-validated as its contract, its agent and tools; LangGraph's
``runtime`` too if it takes one) and returns a ``NodeResult`` (its update with what it
cost) or, as a LangGraph node, its update; the runner (``graphs.node_runner``) validates,
audits and hands over the rest.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import random
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar, cast, get_args, get_origin, get_type_hints
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook
from langgraph.pregel import Pregel
from langgraph.runtime import Runtime
from langgraph.types import Command, RetryPolicy, Send
from pydantic import BaseModel
from typing_extensions import get_protocol_members

from contracts import (
    ArtifactRef,
    BranchResult,
    BranchResults,
    BranchTask,
    ResultStatus,
    RunOutcome,
    TaskSpec,
    TaskState,
    ToolReceipt,
    Usage,
)
from graphs.agents import CONTRIBUTED, TOOLS, AgentOutput, request_channels
from graphs.boundary import CheckedState, read, read_declared, require, validate_channel
from graphs.budget import estimated_tokens
from graphs.channels import Channel, channels_of
from graphs.context import RunContext
from graphs.errors import (
    ContractViolation,
    EmptyFanOut,
    HandoffError,
    Omitted,
    TransientError,
    WiringError,
)
from graphs.outcomes import run_outcome
from graphs.pauses import ASKING, Pause
from graphs.ports import StepInfo, ref_id
from graphs.state import BranchInput, JoinInput
from graphs.tools import Toolbox, ToolEnv
from graphs.tools.declare import ToolSpec

NodeBody = Callable[..., "NodeResult | Mapping[str, object] | Command[Any]"]
"""A node's body: given its NodeCall (and LangGraph's ``runtime``, if it takes one), it
returns a NodeResult or, as a LangGraph node does, its update, or a ``Command`` that also
says where the run goes (see ``run_body``)."""
Fingerprint = Callable[[Any, Any], str]
TaskView = Callable[[TaskSpec, str | None], Any]
RequestT = TypeVar("RequestT")

BranchKeys = Callable[..., list[str]]
"""The keys a fan-out starts one branch task for, from the state it fans out from; given
LangGraph's ``runtime`` too if it takes one, as a LangGraph edge is (its ``context`` the
run's services: keys read from an artifact in the store, say)."""

FAULT_POINTS = (
    "start",
    "attempt",
    "after_artifact",
    "before_write",
    "after_write",
    "before_return",
)
"""Named points of a node where fault injection may act (``<node>:<point>``)."""


def whole_task(task: TaskSpec, key: str | None) -> Any:
    """The ``task_view`` of work that depends on all of the task (but its version)."""
    return task.model_dump(mode="json", exclude={"task_version"})


def no_task(task: TaskSpec, key: str | None) -> None:
    """The ``task_view`` of work that depends on its declared inputs alone."""
    return None


TRANSIENT_RETRY = RetryPolicy(
    initial_interval=0.2,
    backoff_factor=2.0,
    max_interval=5.0,
    max_attempts=sys.maxsize,
    jitter=False,
    retry_on=TransientError,
)
"""A node's retries unless it declares its own ``RetryPolicy`` (or None, one attempt): a
TransientError is tried again 0.2 s later, the wait doubling up to 5 s, as often as the
task's budget allows (``max_attempts`` caps every policy)."""
REPAIRS = 1
"""Attempts given to an agent whose output broke its contract, in a node that retries."""


def is_transient(policy: RetryPolicy | None, error: Exception) -> bool:
    """Whether ``error`` is one a later attempt may not meet: audited as transient.

    A TransientError always is; so is what the policy's ``retry_on`` accepts, as LangGraph
    decides it. The template's own errors (an omission, a contract broken, an artifact
    that does not match) never are, whatever it accepts.
    """
    if isinstance(error, TransientError):
        return True
    if policy is None or isinstance(error, HandoffError):
        return False
    accepts = policy.retry_on
    if isinstance(accepts, Sequence):
        return isinstance(error, tuple(accepts))
    if isinstance(accepts, type):
        return isinstance(error, accepts)
    return bool(accepts(error))


def tries_again(policy: RetryPolicy, attempt: int, budget_attempts: int) -> bool:
    """Whether a transient failure of ``attempt`` is tried again: the budget caps any policy."""
    return attempt < min(policy.max_attempts, budget_attempts)


def wait_before(policy: RetryPolicy, attempt: int) -> float:
    """Seconds to wait before the attempt after ``attempt``, as LangGraph's policy says."""
    interval = policy.initial_interval * policy.backoff_factor ** (attempt - 1)
    return min(policy.max_interval, interval) + (random.uniform(0, 1) if policy.jitter else 0)


@dataclass(frozen=True, kw_only=True)
class Declaration:
    """What a node declares besides its body, checked as soon as it is made.

    Each field and its default is written here only, for the decorator (:data:`node`) and
    the :class:`NodeSpec` alike. Only the name is positional.
    """

    name: str = field(kw_only=False)
    reads: type
    """A TypedDict of the channels the node reads (LangGraph's per-node ``input_schema``)."""
    writes: type
    """A TypedDict of the channels the node may write, each with its contract."""
    agent: type | None = None
    """The agent protocol this node calls; the app supplies an implementation per node."""
    pauses: Pause | None = None
    """The pause it asks a person (kind, actions, its own contracts): it calls
    ``interrupt()``, runs again from its start on resume and records nothing before."""
    terminal: bool = False
    """Records the run's outcome; runs even when the budget is spent."""
    stores_artifacts: bool = False
    """Writes artifacts, so it has an ``after_artifact`` fault point."""
    retry: RetryPolicy | None = TRANSIENT_RETRY
    """LangGraph's ``RetryPolicy``, each attempt audited; None: one attempt (always so for
    pausing nodes)."""
    fingerprint: Fingerprint | None = None
    """Extra input for the input hash that state does not show (e.g. the corpus on disk);
    called with the node's agent and the task."""
    task_view: TaskView | None = None
    """What of the task the work depends on, as JSON-able data (called with the task and
    the branch key, None outside a branch); the input hash covers it instead of the whole
    task, so a revision that leaves it alone reuses the node's result. None: the whole
    task (but its version). Declare it only as narrow as the body and its agent read."""
    read_by: tuple[str, ...] = ()
    """Nodes whose agents also read what this node writes, with no edit to those nodes:
    ``build_graph`` adds the channels to their reads (so their input hash covers them) and
    their agent's request carries them in ``inputs`` (model prompts render them)."""
    branch: BranchKeys | None = None
    """Makes this a branch node: a route to it fans out one task per key (run in parallel,
    each reading ``branch``), and its results go to the join it routes to."""
    joins: tuple[NodeSpec, ...] = ()
    """Makes this a join: it runs once every task of these branch nodes finished, and
    reads their results (``NodeCall.branch_outputs``); a branch that stopped stops it.
    Several branch nodes are work of several kinds side by side: they start together, a
    route naming any one of them starts them all (``graphs.fan_out.together``)."""
    starts_on: str | None = None
    """A channel of the workflow input: a run whose input carries it starts here instead
    of at the wiring's first node (``revise_task`` starts on a ``revision``)."""
    starts_over: bool = False
    """Starts the task over: ``build_graph`` adds every channel another node writes to its
    writes (``graphs.wiring.starting_over``), so it clears what the old task's run
    derived, a node added later included, with no list to keep up."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools its body and agent may call (``NodeCall.tools``); any other is refused.
    The handoff to this node names them (``allowed_tools``)."""
    done_when: tuple[str, ...] = ()
    """What this node's work must meet to count as done, in prose (e.g. the Reviewer's
    checks, for the Writer); the handoff to this node states it (``done_when``)."""

    def __post_init__(self) -> None:
        if self.agent is not None and not getattr(self.agent, "_is_runtime_protocol", False):
            raise TypeError(
                f"node {self.name!r}: agent {self.agent.__name__} must be a @runtime_checkable "
                "Protocol, so the agent the app supplies can be checked against it"
            )
        if self.branch is not None and self.pauses:
            raise TypeError(
                f"node {self.name!r}: a branch cannot pause (its tasks run side by side)"
            )
        if self.terminal and self.agent is not None:
            raise TypeError(
                f"node {self.name!r} is terminal and declares an agent: a terminal node runs "
                "even when the budget is spent, so its agent could spend past it; leave "
                "terminal=False (a node after publishing is then skipped when the budget is "
                "spent, and the run keeps its published outcome)"
            )
        if self.branch is not None and self.task_view is None:
            raise TypeError(
                f"branch {self.name!r} declares no task_view: its input hash would cover the "
                "whole task, so every revision of the task would run all its tasks again; "
                "declare task_view=<(task, key) -> what of the task its work depends on>: "
                "graphs.no_task when it depends on its inputs alone, graphs.whole_task "
                "when on all of the task"
            )
        not_branches = [spec.name for spec in self.joins if spec.branch is None]
        if not_branches:
            raise TypeError(f"node {self.name!r} joins {not_branches}, which are no branch nodes")
        if self.pauses is not None and not isinstance(self.pauses, Pause):
            raise TypeError(
                f"node {self.name!r}: pauses= takes the node's Pause (its kind and the actions a "
                f"person may take, from graphs.pauses), not {self.pauses!r}"
            )
        if self.pauses:  # a pausing node runs once per answer: never retried
            object.__setattr__(self, "retry", None)
        object.__setattr__(self, "read_by", tuple(self.read_by))
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names) or not all(isinstance(t, ToolSpec) for t in self.tools):
            raise TypeError(
                f"node {self.name!r}: tools= takes distinct ToolSpecs, not {self.tools!r}"
            )
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "done_when", tuple(self.done_when))


@dataclass(frozen=True)
class NodeSpec(Declaration):
    """A node as declared: name, body, typed input and output, and how it behaves."""

    body: NodeBody = field(kw_only=True)
    contributed: tuple[str, ...] = ()
    """Channels other nodes' ``read_by`` added to this node's reads (set by the build)."""

    @property
    def inputs(self) -> dict[str, Channel]:
        """The channels read, with their contracts (a branch's key, a join's results too).

        A join also reads what its branch nodes read: it asks their keys functions which
        results to wait for, from the state their fan-out saw.
        """
        found = dict(channels_of(self.reads))
        if self.branch is not None:
            found.update(channels_of(BranchInput))
        for branch in self.joins:
            found.update((name, c) for name, c in branch.inputs.items() if name not in found)
        if self.joins:
            found.pop("branch", None)
            found.update(channels_of(JoinInput))
        return found

    @property
    def outputs(self) -> dict[str, Channel]:
        """The channels written, with their contracts."""
        return channels_of(self.writes)

    @property
    def goes_to(self) -> tuple[str, ...]:
        """Where the node routes itself with ``Command(goto=...)`` (``command_targets``)."""
        return command_targets(self.body)

    def fault_points(self) -> tuple[str, ...]:
        """The fault points this node reaches; a rule naming another one would never fire."""
        points = ["start"]
        if self.retry is not None and not self.pauses:
            points += ["attempt", "before_return"]
        if self.stores_artifacts:
            points.append("after_artifact")
        if any(tool.kind == "write" for tool in self.tools):
            points += ["before_write", "after_write"]
        return tuple(point for point in FAULT_POINTS if point in points)


@dataclass(frozen=True)
class Declared(Declaration):
    """``@node(...)``: a checked declaration waiting for its body."""

    def __call__(self, body: NodeBody | Pregel[Any, Any, Any, Any]) -> NodeSpec:
        """The node: this declaration with its body, or a compiled graph run as its body."""
        declared = {item.name: getattr(self, item.name) for item in fields(Declaration)}
        if isinstance(body, Pregel):
            body = subgraph_body(self.name, body, self.writes)
        elif not callable(body):
            raise TypeError(
                f"node {self.name!r}: its body must be a function or a compiled graph, not "
                f"{type(body).__name__}"
            )
        spec = NodeSpec(**declared, body=body)
        spec.inputs, spec.outputs  # noqa: B018 - a schema that names no contract fails here
        return spec


def subgraph_body(name: str, graph: Pregel[Any, Any, Any, Any], writes: type) -> NodeBody:
    """A compiled graph as a node's body: the declared inputs in, the declared writes out.

    It runs inside the node, so LangGraph checkpoints its steps under the node's namespace
    in the thread: a run killed inside it resumes at its last finished step. The input
    hash covers its nodes' code (``graphs.input_hash.code_version``).
    """
    written = set(channels_of(writes))

    def body(state: Any) -> dict[str, Any]:
        given = {channel: state[channel] for channel in state.spec.inputs}
        out = graph.invoke(
            {channel: value for channel, value in given.items() if value is not None}
        )
        return {channel: value for channel, value in out.items() if channel in written}

    body.__name__ = body.__qualname__ = f"{name}_subgraph"
    body.subgraph = graph  # type: ignore[attr-defined]  # read by code_version
    return body


@functools.cache
def command_targets(body: Callable[..., Any]) -> tuple[str, ...]:
    """Where a body returning ``Command[Literal[...]]`` may go; () if it returns its update.

    LangGraph reads a node's destinations from that annotation too.
    Such a node is wired with no router, ``(node, None)``: where it goes is its own.
    """
    returned = inspect.get_annotations(body).get("return")
    if returned is None or (isinstance(returned, str) and "Command" not in returned):
        return ()
    hint = get_type_hints(body).get("return")
    if get_origin(hint) is not Command:
        return ()
    found = tuple(arg for literal in get_args(hint) for arg in get_args(literal))
    if not found or not all(isinstance(arg, str) for arg in found):
        raise TypeError(
            f"node body {body.__name__} returns {hint}: name where it may go, "
            "Command[Literal['writer', 'research']]"
        )
    return found


node = Declared
"""Declare a node from its body: ``@node("name", reads=..., writes=..., ...)``.

``branch`` makes it a branch node (one parallel task per key; ``one_task`` for a node
that runs once beside others), ``joins`` a join that waits for the branch nodes it names.
"""


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


class Charged:
    """A node's agent as its body reaches it: what each run reports is the attempt's cost.

    However the body calls it (``NodeCall.delegate``, ``call.agent``, or a LangGraph
    node's ``runtime.context.agents[...]``), the runner charges the usage and keeps the
    receipts its runs report, so no body can leave them out. Every other member of the
    agent's protocol is the agent's own, so the wrapper is still that protocol's.
    """

    def __init__(self, agent: Any, protocol: type | None, reported: list[Any]) -> None:
        self.agent = agent
        self.reported = reported
        for name in get_protocol_members(protocol) if protocol is not None else ():
            if name != "run":
                setattr(self, name, getattr(agent, name))

    def run(self, request: Any) -> Any:
        """The agent's run, its output kept for the runner to charge.

        A run that fails is charged what its error says it spent (agents attach it), even
        when the body catches the error and goes on.
        """
        try:
            output = self.agent.run(request)
        except Exception as error:
            spent = getattr(error, "usage", None)
            if isinstance(spent, Usage):
                self.reported.append(AgentOutput(None, usage=spent))
            raise
        self.reported.append(output)
        return output

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)


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
    did not read would be dropped (``graphs.node_runner.check_merged``)."""
    runtime: Runtime[RunContext] | None = None
    """LangGraph's runtime for this task, its ``context`` the run's services."""
    reported: list[AgentOutput[Any]] = field(default_factory=list)
    """What the node's agent returned in this attempt: the runner charges its usage."""
    metered: int = 0
    """Tokens the chat models run in this attempt reported (``ModelUsage``), whoever ran
    them: an agent that reports less than its models spent is charged what they spent."""
    estimated: int = 0
    """Of ``metered``, the tokens estimated for model calls that reported no usage."""
    receipted: Callable[[ToolReceipt], None] | None = None
    """Where the toolbox reports each call's receipt as it ends: the attempt's ledger row
    (``graphs.node_runner.Attempt``), so a killed attempt's calls stay in the audit."""

    def __getitem__(self, channel: str) -> Any:
        """``state[channel]`` of a LangGraph node: a declared input as its contract, or None."""
        return self.read(channel)

    def get(self, channel: str, default: Any = None) -> Any:
        """``state.get(channel)`` of a LangGraph node: a declared input, or ``default``."""
        value = self.read(channel)
        return default if value is None else value

    def read(self, channel: str) -> Any:
        """A channel the node declared it reads, as its contract (or None), re-validated."""
        return read_declared(self.state, self._input(channel), node=self.spec.name)

    def require(self, channel: str) -> Any:
        """A declared input that must be present at this point of the flow."""
        declared = self._input(channel)
        if not declared.many:
            return require(self.state, channel, declared.contract, node=self.spec.name)
        value = read_declared(self.state, declared, node=self.spec.name)
        if value is None:
            raise ContractViolation(
                f"node {self.spec.name!r} needs {channel!r} ({declared.shown}) but the state "
                "has none",
                node=self.spec.name,
                channel=channel,
                fields=[channel],
            )
        return value

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

    def delegate(self, kind: type[RequestT], channel: str, **given: Any) -> Any:
        """Run the node's agent and return its result validated as ``channel``'s contract.

        The request is built as ``request`` builds it, with the run's artifact store and
        this step unless ``given`` names others, and, when the request has a ``tools``
        field, the node's tools (so a tool given to the node reaches its agent with no
        second place to name it). What the run cost is charged to the attempt (``Charged``).
        """
        given.setdefault("store", self.ctx.store)
        given.setdefault("step", self.step)
        if takes_tools(cast(type[Any], kind)):
            given.setdefault(TOOLS, self.tools)
        output: AgentOutput[Any] = self.agent.run(self.request(kind, **given))
        return self.accept(channel, output.result)

    def branch_outputs(self, branch: NodeSpec, channel: str) -> list[tuple[str, Any]]:
        """A join's view of one channel of its branches: (key, contract) per branch.

        In the order the fan-out started them; every branch the fan-out starts from this
        state must have a result (a join never merges part of its branches silently).
        """
        joined = {spec.name: spec for spec in self.spec.joins}
        if branch.name not in joined:
            raise ContractViolation(
                f"node {self.spec.name!r} reads the branches of {branch.name!r}, which it "
                f"does not join; it joins {[spec.name for spec in self.spec.joins]}",
                node=self.spec.name,
                channel="branches",
                fields=["branches"],
            )
        branch = joined[branch.name]  # as the wiring declares it (a tool given there, say)
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
            for key, result in branch_results(self.spec, branch, self.state, self.runtime).items()
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
            on_receipt=self.receipted,
        )

    def opened_tools(self) -> Toolbox | None:
        """The toolbox, if the body asked for it (so a node without tools needs none)."""
        toolbox = self.__dict__.get("tools")
        return toolbox if isinstance(toolbox, Toolbox) else None

    @functools.cached_property
    def agent(self) -> Any:
        """The agent the app supplies for this node (declared by its protocol), charged."""
        return Charged(self.ctx.agent_for(self.spec), self.spec.agent, self.reported)

    def agent_spent(self, besides: Usage | None = None) -> tuple[Usage, list[ToolReceipt]]:
        """What the attempt spent, and the receipts its agent's runs reported.

        The spend is ``besides`` (what the body reported itself) and the agent's runs, never
        fewer tokens than the attempt's chat models reported (``metered``): a body
        calling a model itself, or an agent that leaves its model's usage out, is charged it.
        """
        usage = sum((output.usage for output in self.reported), besides or Usage())
        if self.metered > usage.tokens or (self.metered == usage.tokens and self.estimated):
            usage = Usage(
                tool_calls=usage.tool_calls, tokens=self.metered, estimated_tokens=self.estimated
            )
        return usage, [receipt for output in self.reported for receipt in output.receipts]

    def services(self) -> RunContext:
        """The run's services as a LangGraph node's ``runtime.context``: its agent charged."""
        if self.spec.agent is None or self.spec.name not in self.ctx.agents:
            return self.ctx
        return replace(self.ctx, agents={**self.ctx.agents, self.spec.name: self.agent})

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
    goto: str | tuple[str, ...] | None = None
    """Where a node that routes itself goes next (its ``Command(goto=...)``)."""
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


def json_or_none(text: str | None) -> Any:
    """A branch output's JSON text as data (None: the branch did not write the channel)."""
    return None if text is None else json.loads(text)


def keys_of(
    branch: NodeSpec, state: Mapping[str, Any], runtime: Runtime[RunContext] | None
) -> list[str]:
    """The keys ``branch`` fans out to from this state (and the runtime, if it takes one).

    None, or one twice, is refused: nothing would run and the run would stop.
    """
    assert branch.branch is not None
    keys = given_runtime(branch.branch, state, runtime)
    if not keys:
        raise EmptyFanOut(
            f"the fan-out to {branch.name!r} found no branch key in this state: nothing would "
            "run and the run would stop; give its keys function a key for the case (one task "
            "that handles nothing to do), or route around the branch when there is no work"
        )
    if len(set(keys)) != len(keys):
        raise EmptyFanOut(f"the fan-out to {branch.name!r} gave a key twice: {keys}")
    return list(keys)


def sent(state: Any) -> list[str]:
    """The keys of a node LangGraph ``Send``s start: one per Send, in the router's order.

    The build declares it (``graphs.fan_out.mapped``) for a node no route names, in a
    wiring with a router returning ``list[Send]``: each Send is one task of the node (its
    key ``send-0001``, ``send-0002``, ...), and the node it goes on to reduces them. Only
    the router knows the keys, so there is nothing to ask here.
    """
    raise WiringError(
        "a node LangGraph's Sends start has no keys of its own: a router starts it by "
        "returning [Send(node, payload), ...], one task per Send"
    )


def spends(spec: NodeSpec) -> bool:
    """Whether a task of ``spec`` can spend budget: its agent's tokens, its tools' calls."""
    return spec.agent is not None or bool(spec.tools)


def sent_tasks(
    router: str, sends: Sequence[Send], state: Mapping[str, Any], nodes: Mapping[str, NodeSpec]
) -> list[Send]:
    """A router's Sends as they run: each payload checked, with what it does not carry.

    Each payload key must be a channel its node reads, holding that channel's contract;
    the node's other declared inputs come from ``state`` (the state the router saw), and
    each task gets the ``branch`` it runs (its key, and how many tasks share the budget).
    ``nodes`` are the nodes Sends may start (``branch=sent``). A wrong Send fails here,
    naming the node or field and the fix.
    """
    if not sends:
        raise EmptyFanOut(
            f"router {router} returned no Send: nothing would run and the run would stop "
            "with no outcome; return a node's name for the case instead (its return type "
            "-> list[Send] | Literal['<node>'])"
        )
    targets = {name: spec for name, spec in nodes.items() if spec.branch is sent}
    for send in sends:
        spec = targets.get(send.node)
        if spec is None:
            raise WiringError(
                f"router {router} sends to {send.node!r}, which no Send may start: a Send "
                f"starts a node of the wiring that no route names ({sorted(targets)}); "
                "add it to the wiring with the node its tasks go on to, (node, '<reduce>'), "
                "and name it in no router's Literal"
            )
        if not isinstance(send.arg, Mapping):
            raise WiringError(
                f"router {router} sends {send.node!r} a {type(send.arg).__name__}: a Send's "
                f"payload is a dict of channels {spec.reads.__name__} declares"
            )
        for field_name, value in send.arg.items():
            if field_name not in spec.inputs or field_name == "branch":
                raise Omitted(
                    f"router {router} sends {send.node!r} the field {field_name!r}, which its "
                    f"input schema {spec.reads.__name__} does not declare; declared: "
                    f"{sorted(set(spec.inputs) - {'branch'})}; add {field_name!r} to "
                    f"{spec.reads.__name__} or leave it out of the Send"
                )
            try:
                validate_channel(send.node, field_name, value, spec.inputs)
            except ContractViolation as error:
                raise WiringError(
                    f"router {router} sends {send.node!r} an invalid {field_name!r} "
                    f"(fields {error.fields}): {error.message}"
                ) from error
    names = list(dict.fromkeys(send.node for send in sends))
    share = sum(1 for send in sends if spends(targets[send.node])) or 1
    return [
        Send(
            send.node,
            {
                **{
                    name: state[name]
                    for name in targets[send.node].inputs
                    if name in state and name != "branch"
                },
                **send.arg,
                "branch": BranchTask(
                    node=send.node, key=f"send-{index:04d}", tasks=share, nodes=names
                ),
            },
        )
        for index, send in enumerate(sends, 1)
    ]


def branch_results(
    join: NodeSpec,
    branch: NodeSpec,
    state: Mapping[str, Any],
    runtime: Runtime[RunContext] | None,
) -> dict[str, BranchResult]:
    """The latest result of each branch ``branch`` fans out to from this state, by key.

    The tasks Sends started are those whose results the channel holds: LangGraph ran
    them all in the step before their join, and the join took the earlier ones out.
    """
    results = read(state, "branches", BranchResults, node=join.name)
    found = results.of(branch.name) if results else {}
    keys = list(found) if branch.branch is sent else keys_of(branch, state, runtime)
    missing = [key for key in keys if key not in found]
    if missing:
        raise ContractViolation(
            f"join {join.name!r} found no result of {branch.name!r} for {missing}: a join "
            "runs only after every branch it waits for",
            node=join.name,
            channel="branches",
            fields=["branches"],
        )
    return {key: found[key] for key in keys}


def stored_in(update: Mapping[str, Any]) -> list[str]:
    """The artifact revisions an update's contracts name at their top level, as audited.

    A body returning its update as a LangGraph node does names what it stored this way,
    so the audit lists it as a NodeResult's ``artifact_ids`` would.
    """
    found: list[str] = []
    for value in update.values():
        for name in type(value).model_fields if isinstance(value, BaseModel) else ():
            held = getattr(value, name)
            for ref in held if isinstance(held, list) else [held]:
                if isinstance(ref, ArtifactRef) and ref_id(ref) not in found:
                    found.append(ref_id(ref))
    return found


@functools.cache
@functools.lru_cache(maxsize=4096)
def takes_runtime(body: Callable[..., Any]) -> bool:
    """Whether a body takes LangGraph's runtime: a parameter named so, as LangGraph reads it."""
    return "runtime" in inspect.signature(body).parameters


def given_runtime(fn: Callable[..., Any], state: Any, runtime: Any) -> Any:
    """``fn(state)``, with LangGraph's ``runtime`` too when ``fn`` takes one.

    As LangGraph calls a node or a conditional edge: a router, a keys function.
    """
    return fn(state, runtime=runtime) if takes_runtime(fn) else fn(state)


_STEP: ContextVar[StepInfo] = ContextVar("handoff_step")
"""The step of the body running in this context (set by ``run_body``)."""


def commanded(spec: NodeSpec, command: Command[Any]) -> NodeResult:
    """A ``Command`` a node routes itself with: its update, and where it goes."""
    goto: Any = command.goto
    names = (goto,) if isinstance(goto, str) else tuple(goto)
    strays = [name for name in names if not isinstance(name, str) or name not in spec.goes_to]
    if command.graph is not None or command.resume is not None or not names or strays:
        raise TypeError(
            f"node {spec.name!r} returned {command!r}: a node's Command goes to nodes its "
            f"return type names ({', '.join(spec.goes_to)}), in this graph, with no resume"
        )
    update = dict(command.update or {})
    goes = names[0] if isinstance(goto, str) else cast(tuple[str, ...], names)
    return NodeResult(update, artifact_ids=stored_in(update), goto=goes)


class ModelUsage(BaseCallbackHandler):
    """What the chat models run in a body report spending (their ``usage_metadata``).

    A body may call a LangChain chat model itself, and an agent (a prebuilt ReAct agent, say)
    may not report all its model spent; LangChain hands every model run in the body's
    context to this handler (a configure hook, as its own ``get_usage_metadata_callback``
    is), so the attempt is charged at least what the models reported. A generation that
    reports no usage (a model streaming its tokens often does not) is charged an estimate
    from its prompt's and its reply's characters (``graphs.budget.estimated_tokens``),
    counted in ``estimated`` too: a reported usage is charged as it is, never estimated.
    """

    def __init__(self) -> None:
        self.tokens = 0
        self.estimated = 0
        self._prompts: dict[UUID, list[int]] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        """Keep the size of each prompt, in case its reply reports no usage."""
        with self._lock:
            self._prompts[run_id] = [sum(len(m.text) for m in prompt) for prompt in messages]

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """A text model's prompts, kept as a chat model's are."""
        with self._lock:
            self._prompts[run_id] = [len(prompt) for prompt in prompts]

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A call that failed reported nothing: its prompt is let go."""
        with self._lock:
            self._prompts.pop(run_id, None)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add the tokens each generation's message reports, or the estimate for it."""
        with self._lock:
            prompts = self._prompts.pop(run_id, [])
        reported = estimated = 0
        for index, generations in enumerate(response.generations):
            prompt = prompts[index] if index < len(prompts) else 0
            for generation in generations:
                message = getattr(generation, "message", None)
                spent = getattr(message, "usage_metadata", None)
                if spent:
                    reported += int(
                        spent.get("total_tokens")
                        or spent.get("input_tokens", 0) + spent.get("output_tokens", 0)
                    )
                    continue
                calls = getattr(message, "tool_calls", None) or []
                reply = len(generation.text) + (len(json.dumps(calls, default=str)) if calls else 0)
                estimated += estimated_tokens(prompt + reply)
                prompt = 0  # a prompt is read once, however many replies it has
        with self._lock:
            self.tokens += reported + estimated
            self.estimated += estimated


_MODEL_USAGE: ContextVar[ModelUsage | None] = ContextVar("handoff_model_usage", default=None)
register_configure_hook(_MODEL_USAGE, inheritable=True)


def get_step_info() -> StepInfo:
    """The step the running node's body is at, as LangGraph's ``get_config()`` is the config.

    A body written as a LangGraph node gets no ``NodeCall``; this gives it what a pause's
    request (``graphs.human.pause_request``), the decision it records and an agent's
    request are made from: the thread, the superstep, the task version, the budget left.
    """
    try:
        return _STEP.get()
    except LookupError:
        raise RuntimeError(
            "get_step_info() is called from outside a node's body: only a body the runner "
            "is running has a step"
        ) from None


def run_body(call: NodeCall) -> NodeResult:
    """What the body returns for ``call``, given and taken as a LangGraph node's would be.

    A body written as a LangGraph node, ``def count(state: CountInput, runtime:
    Runtime[RunContext]) -> CountOutput``, reads ``state[...]`` (each declared channel as
    its contract) and returns its update as a dict; the runner validates, audits and hands
    it over as any NodeResult's. It reaches its step through :func:`get_step_info`. An
    ``async def`` body runs to its end on an event loop of its own in the thread the node
    runs in (LangGraph runs a sync node in a worker thread under ``ainvoke`` and the dev
    server), with the same context: its config, its step, its pause.
    """
    spec = call.spec
    token = _STEP.set(call.step)
    models = ModelUsage()
    counting = _MODEL_USAGE.set(models)
    asking = ASKING.set((spec.name, spec.pauses))
    try:
        if takes_runtime(spec.body):
            runtime = call.runtime or Runtime(context=call.ctx)
            given = spec.body(call, runtime=runtime.override(context=call.services()))
        else:
            given = spec.body(call)
        if inspect.iscoroutine(given):  # an async body, run to its end where the node runs
            given = asyncio.run(given)
    finally:
        ASKING.reset(asking)
        _MODEL_USAGE.reset(counting)
        _STEP.reset(token)
        call.metered += models.tokens  # charged as an agent's run is, a failed one too
        call.estimated += models.estimated
    if isinstance(given, Command) and spec.goes_to:
        given = commanded(spec, given)
    if isinstance(given, Mapping):
        given = NodeResult(dict(given), artifact_ids=stored_in(given))
    if isinstance(given, NodeResult):
        usage, receipts = call.agent_spent(given.usage)
        return replace(given, usage=usage, receipts=[*receipts, *given.receipts])
    routes = (
        ": where the run goes is its router's, the conditional edge of its wiring entry, so "
        "the envelope it hands over names the node that runs next (or annotate the body "
        "-> Command[Literal[...]] and wire it with no router, (node, None)); "
        if isinstance(given, Command)
        else ": "
    )
    raise TypeError(
        f"node {spec.name!r} returned {type(given).__name__}{routes}return its update as a "
        f"dict of the channels it writes ({', '.join(sorted(spec.outputs)) or 'none'}), or a "
        "NodeResult"
    )
