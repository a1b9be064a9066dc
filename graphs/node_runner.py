"""The boundary every node runs inside: validation, reuse, budgets, pauses, retries, audit.

``run_node`` turns a declared node into a LangGraph node. Each call goes through four named
steps, in order, and the first one that produces the update wins:

1. ``reuse``: a finished attempt with the same input hash recorded its update (the node
   finished, then the process died before the checkpoint): replay it, work nothing twice.
2. ``over_budget``: no step may start once the thread's budget is spent.
3. ``pause``: a node that asks a person records its attempt only after the answer.
4. ``attempts``: run the body, retry transient failures with backoff, give invalid agent
   output one repair, audit every attempt.

Then ``hand_over`` asks the node's router (the same pure function the graph's conditional
edge runs on the same state) where the run goes, and derives the handoff envelope from the
state the next node will see: the envelope always names the node that actually runs next.

Parallel branches: a branch node's update (its outputs, envelope or stop outcome) is kept
under its own key in the ``branches`` channel (``as_branch_result``), so tasks of one step
never write the same channel. A join first looks at its branches (``stopped_branch``): one
that had to stop ends the run with that branch's own errors; otherwise the join runs like
any node, its envelope lists every branch (``joined_handoff``), and its update drops the
results it merged from the channel.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, get_args, get_type_hints

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from pydantic import BaseModel

from contracts import (
    BranchResult,
    BranchResults,
    BranchTask,
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    ErrorKind,
    Handoff,
    JoinedBranch,
    NodeError,
    NodeRun,
    RunOutcome,
    TaskSpec,
    TaskState,
    ToolReceipt,
    Usage,
)
from graphs.boundary import CheckedState, read, require, validate_channel
from graphs.budget import branch_share, exhausted, left, used
from graphs.channels import channels_of
from graphs.context import RunContext
from graphs.declare import NodeSpec
from graphs.errors import ContractViolation, MissingContext, TransientError
from graphs.handoffs import derive_handoff
from graphs.input_hash import input_hash
from graphs.ports import CONTRIBUTED, StepInfo, request_channels
from graphs.state import RunnerWrites

ContextFactory = Callable[[Any], RunContext]
"""Services for a run given the context its caller passed (JSON choices from a server)."""
Router = Callable[[Mapping[str, Any]], str | tuple[str, ...]]
RequestT = TypeVar("RequestT")
MAX_BACKOFF_SECONDS = 5.0


@dataclass
class NodeCall:
    """What a node body gets: its declared inputs, its agent, services, where it runs."""

    spec: NodeSpec
    state: CheckedState
    task: TaskSpec
    ctx: RunContext
    step: StepInfo

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
        hints = get_type_hints(kind)
        if self.spec.contributed and CONTRIBUTED not in given:
            given[CONTRIBUTED] = {channel: self.read(channel) for channel in self.spec.contributed}
        values = {
            name: (
                self.read(channel) if type(None) in get_args(hints[name]) else self.require(channel)
            )
            for name, channel in request_channels(kind).items()
            if name not in given
        }
        return kind(**values, **given)

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

    @property
    def agent(self) -> Any:
        """The agent the app supplies for this node (declared by its protocol)."""
        return self.ctx.agent_for(self.spec)

    def _input(self, channel: str) -> Any:
        inputs = self.spec.inputs
        if channel not in inputs:
            raise ContractViolation(
                f"node {self.spec.name!r} reads {channel!r}, which its input schema "
                f"{self.spec.reads.__name__} does not declare; declared: {sorted(inputs)}",
                node=self.spec.name,
                channel=channel,
                fields=[channel],
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


def json_or_none(text: str | None) -> Any:
    """A branch output's JSON text as data (None: the branch did not write the channel)."""
    return None if text is None else json.loads(text)


def branch_results(
    join: NodeSpec, branch: NodeSpec, state: Mapping[str, Any]
) -> dict[str, BranchResult]:
    """The latest result of each branch ``branch`` fans out to from this state, by key."""
    assert branch.branch is not None
    keys = branch.branch(state)
    results = read(state, "branches", BranchResults, node=join.name)
    found = results.of(branch.name) if results else {}
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


def stopped_branch(visit: Visit) -> dict[str, Any] | None:
    """A join whose branch had to stop ends the run with that branch's own errors.

    Every branch that stopped contributes its errors, in fan-out order; the first one's
    reason is the run's. The join's own work does not run: it would merge a part.
    """
    stops = [
        result.outcome
        for branch in visit.spec.joins
        for result in branch_results(visit.spec, branch, visit.state).values()
        if result.outcome is not None
    ]
    if not stops:
        return None
    first = stops[0]
    outcome = first.model_copy(
        update={
            "errors": [error for stop in stops for error in stop.errors],
            "retryable": all(stop.retryable for stop in stops),
        }
    )
    return visit.hand_over(NodeResult({"outcome": outcome}))


def resolve_context(
    runtime: Runtime[RunContext] | None, fallback: ContextFactory | None
) -> RunContext:
    """The run's services: from the runtime context, else the graph's default factory."""
    context = runtime.context if runtime is not None else None
    if isinstance(context, RunContext):
        return context
    if fallback is not None:
        return fallback(context)
    raise MissingContext(
        "no RunContext: pass context=RunContext(...) to invoke/stream (on every resume too), "
        "or build the graph with build_graph(default_context=...)"
    )


def step_info(
    config: RunnableConfig,
    node: str,
    task: TaskSpec,
    branch: str | None = None,
) -> StepInfo:
    """Where this node runs, from LangGraph's config (and the branch it runs, if any)."""
    configurable = config.get("configurable") or {}
    metadata = config.get("metadata") or {}
    thread_id = str(configurable.get("thread_id") or task.task_id)
    step = metadata.get("langgraph_step")
    return StepInfo(
        branch=branch,
        thread_id=thread_id,
        node=node,
        step=int(step) if isinstance(step, int) else -1,
        task_version=task.task_version,
    )


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
    return RunOutcome(
        thread_id=step.thread_id,
        task_id=task.task_id,
        state=TaskState.COMPLETED if partial else TaskState.FAILED,
        result_status="partial" if partial else "failed",
        errors=[error],
        retryable=retryable,
        draft=draft.body if draft else None,
        review_rounds=draft.revision if draft else 0,
        reason=f"stopped at {step.node}: {error.detail}",
    )


def agent_name(ctx: RunContext, spec: NodeSpec) -> str | None:
    """Which implementation does this node's work, for the audit."""
    if spec.agent is None:
        return None
    agent = ctx.agent_for(spec)
    describe = getattr(agent, "describe", None)
    return str(describe()) if callable(describe) else type(agent).__name__


class Attempt:
    """One ledger entry: written as 'running' when it starts, finished exactly once."""

    def __init__(self, visit: Visit, step: StepInfo) -> None:
        self.visit = visit
        self.step = step
        self.began = time.perf_counter()
        self.record = NodeRun(
            task_version=step.task_version,
            node_id=step.node,
            attempt=step.attempt,
            status="running",
            input_hash=visit.key,
            agent=visit.agent,
            started_at=visit.ctx.clock(),
        )
        self.seq = visit.ctx.ledger.start(step.thread_id, self.record)

    def finish(
        self,
        result: NodeResult | None = None,
        *,
        update: dict[str, Any] | None = None,
        usage: Usage | None = None,
        error: tuple[ErrorKind, str] | None = None,
        reused: bool = False,
    ) -> None:
        """Record how the attempt ended; a succeeded one stores the update it returns."""
        final = self.record.model_copy(
            update={
                "status": "failed" if error else "succeeded",
                "ended_at": self.visit.ctx.clock(),
                "duration_ms": round((time.perf_counter() - self.began) * 1000, 3),
                "usage": result.usage if result else usage or Usage(),
                "artifact_ids": result.artifact_ids if result else [],
                "checked_inputs": result.checked_inputs if result else [],
                "error": NodeError(kind=error[0], detail=error[1][:4000]) if error else None,
                "reused": reused,
            }
        )
        stored = None if update is None else _dump(update)
        self.visit.ctx.ledger.finish(self.step.thread_id, self.seq, final, stored)

    def finish_waiting(self) -> None:
        """The node paused for a human (an interrupt); it will run again on resume."""
        final = self.record.model_copy(
            update={"status": "waiting_user", "ended_at": self.visit.ctx.clock()}
        )
        self.visit.ctx.ledger.finish(self.step.thread_id, self.seq, final)


@dataclass
class Visit:
    """One execution of a node by LangGraph: what every step below works from."""

    spec: NodeSpec
    route: Router
    state: CheckedState
    task: TaskSpec
    ctx: RunContext
    step: StepInfo
    key: str
    agent: str | None
    branch: BranchTask | None = None
    """The branch a fanned-out task runs (its key, and how many tasks share the budget)."""

    @functools.cached_property
    def prior_runs(self) -> list[NodeRun]:
        """The thread's audit as the visit began (read once for the budget and attempt count)."""
        return self.ctx.ledger.runs(self.step.thread_id)

    def call(self, step: StepInfo) -> NodeCall:
        """The body's view of this visit at one attempt."""
        return NodeCall(spec=self.spec, state=self.state, task=self.task, ctx=self.ctx, step=step)

    def validate(self, update: Mapping[str, Any]) -> dict[str, Any]:
        """The update, each channel checked against what this node (or the runner) writes."""
        allowed = {**self.spec.outputs, **RUNNER_CHANNELS}
        return {
            channel: validate_channel(self.spec.name, channel, value, allowed)
            for channel, value in update.items()
        }

    def hand_over(self, result: NodeResult) -> dict[str, Any]:
        """The validated update plus the envelope for the node the route picks next."""
        update = self.validate(result.update)
        after = self.state.updated(update)
        target = self.route(after)
        first = target if isinstance(target, str) else target[0]
        handoff = derive_handoff(
            after, producer=self.step, next_node=first, receipts=result.receipts
        )
        if not isinstance(target, str):  # branch nodes of several kinds, side by side
            handoff = handoff.model_copy(update={"next_nodes": list(target)})
        if self.spec.joins:
            handoff = joined_handoff(self.spec, self.state, handoff)
        update["handoff"] = handoff
        return update


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


def as_branch_result(visit: Visit, update: dict[str, Any]) -> dict[str, Any]:
    """A branch's update, kept under its own key in the ``branches`` channel.

    Branches of one step run side by side; had each written ``research`` or ``handoff``
    itself, LangGraph would refuse the second write of the step (or keep one of them).
    """
    branch = require(visit.state, "branch", BranchTask, node=visit.spec.name)
    outputs = {
        channel: value.model_dump_json()
        for channel, value in sorted(update.items())
        if channel in visit.spec.outputs and isinstance(value, BaseModel)
    }
    said = [
        value.summary()
        for channel, value in sorted(update.items())
        if channel in outputs and callable(getattr(value, "summary", None))
    ]
    result = BranchResult(
        node=visit.spec.name,
        key=branch.key,
        input_hash=visit.key,
        outputs=outputs,
        summary="; ".join(said)[:500],
        handoff=update["handoff"],
        outcome=update.get("outcome"),
    )
    return {"branches": BranchResults(results=[result])}


RUNNER_CHANNELS = channels_of(RunnerWrites)
"""Channels the runner itself may write for any node: the envelope, a stop outcome, and
the task when the run's choices changed it."""


def reuse(visit: Visit) -> dict[str, Any] | None:
    """Replay the update a finished attempt with this very input recorded."""
    succeeded = any(
        run.node_id == visit.spec.name and run.input_hash == visit.key and run.status == "succeeded"
        for run in visit.prior_runs
    )
    if not succeeded:  # nothing to replay: no need to ask the ledger for a result
        return None
    stored = visit.ctx.ledger.result(visit.step.thread_id, visit.spec.name, visit.key)
    if stored is None:
        return None
    update = visit.validate(json.loads(stored))
    Attempt(visit, visit.step).finish(reused=True)
    return update


def over_budget(visit: Visit) -> dict[str, Any] | None:
    """Stop before a step the budget no longer allows (terminal nodes and joins always run).

    A join merges work its branches already paid for: stopping it would lose their
    (partial) results, and the next node's step is where the spent budget stops the run.
    """
    if visit.spec.terminal or visit.spec.joins:
        return None
    problem = exhausted(visit.task, used(visit.prior_runs), visit.ctx.clock())
    if problem is None:
        return None
    Attempt(visit, visit.step).finish(error=("budget_exhausted", problem.detail))
    outcome = stop_outcome(visit.state, visit.task, visit.step, problem, retryable=False)
    return visit.hand_over(NodeResult({"outcome": outcome}))


def pause(visit: Visit) -> dict[str, Any]:
    """Run a node that asks a person; its attempt is written once the answer is in.

    Such a node re-runs from its start on every resume, so it records nothing before the
    decision arrives (the ``interrupt()`` inside the body raises until then).
    """
    with visit.ctx.store.batch():
        result = visit.spec.body(visit.call(visit.step))
        update = visit.hand_over(result)
    Attempt(visit, visit.step).finish(result, update=update)
    return update


def attempts(visit: Visit) -> dict[str, Any]:
    """Run the body until it succeeds, or its retries or repairs run out."""
    spec, ctx, task = visit.spec, visit.ctx, visit.task
    rules = spec.retry
    runs = visit.prior_runs
    attempt = 1 + sum(1 for run in runs if run.node_id == spec.name and run.input_hash == visit.key)
    repairs = rules.repairs if rules else 0
    first = attempt
    while True:
        if attempt > first:  # the visit's failed attempts are in the audit now
            runs = ctx.ledger.runs(visit.step.thread_id)
        if visit.branch is not None:
            calls, tokens = branch_share(task.budget, runs, visit.branch, (spec.name, visit.key))
        else:
            calls, tokens = left(task.budget, runs)
        step = replace(visit.step, attempt=attempt, tool_calls_left=calls, tokens_left=tokens)
        current = Attempt(visit, step)
        try:
            with ctx.store.batch():  # the attempt's puts, durable before its row names them
                result = spec.body(visit.call(step))
                update = visit.hand_over(result)
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
            return _stopped(visit, step, detail, retryable=True)
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
            return _stopped(visit, step, detail, retryable=False)
        except GraphBubbleUp:
            current.finish_waiting()
            raise
        except BaseException as error:
            current.finish(error=("internal", f"{type(error).__name__}: {error}"))
            raise
        current.finish(result, update=update)
        return update


def _stopped(
    visit: Visit, step: StepInfo, error: ErrorDetail, *, retryable: bool
) -> dict[str, Any]:
    outcome = stop_outcome(visit.state, visit.task, step, error, retryable=retryable)
    return visit.hand_over(NodeResult({"outcome": outcome}))


def _spent(error: BaseException) -> Usage | None:
    """What a failed attempt had already consumed (agents attach it to their errors)."""
    usage = getattr(error, "usage", None)
    return usage if isinstance(usage, Usage) else None


def _dump(update: dict[str, Any]) -> str:
    """The update as one JSON object (contracts serialised by pydantic, not re-walked)."""
    members = ",".join(
        f"{json.dumps(channel)}:"
        + (value.model_dump_json() if isinstance(value, BaseModel) else json.dumps(value))
        for channel, value in sorted(update.items())
    )
    return "{" + members + "}"


def chosen_task(ctx: RunContext, task: TaskSpec, step: StepInfo, *, audit: bool = True) -> TaskSpec:
    """The task with the run's choices in force; a change is written to the audit.

    The node that first applies a choice also writes the changed task back to the thread
    (see ``run_node``), so every later node, router and resume sees the same task. A branch
    applies them without either (``audit=False``): its join, the next node, does both once.
    """
    if ctx.choices is None:
        return task
    chosen = ctx.choices.applied(task)
    if chosen is not task and audit:
        now = ctx.clock()
        made = ctx.choices.describe()
        record = NodeRun(
            task_version=task.task_version,
            node_id=f"choose: {made}"[:100],
            attempt=1,
            status="succeeded",
            input_hash=hashlib.sha256(made.encode()).hexdigest(),
            started_at=now,
            ended_at=now,
            duration_ms=0,
        )
        ctx.ledger.finish(step.thread_id, ctx.ledger.start(step.thread_id, record), record)
    return chosen


def run_node(
    spec: NodeSpec, route: Router, default_context: ContextFactory | None = None
) -> Callable[..., dict[str, Any]]:
    """A LangGraph node for a declared one.

    Every read and write is validated, every attempt audited, and the route ``route`` will
    take is recorded in the handoff the node returns.
    """

    def node(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> dict[str, Any]:
        ctx = resolve_context(runtime, default_context)
        checked = CheckedState(state)
        given = require(checked, "task", TaskSpec, node=spec.name)
        branch = read(checked, "branch", BranchTask, node=spec.name) if spec.branch else None
        step = step_info(config, spec.name, given, branch.key if branch else None)
        with ctx.node_running(step):
            task = chosen_task(ctx, given, step, audit=spec.branch is None)
            if task is not given:  # a copy with the choices in force: validated when first read
                checked = CheckedState({**state, "task": task})
            visit = Visit(
                spec=spec,
                route=route,
                state=checked,
                task=task,
                ctx=ctx,
                step=step,
                key=input_hash(spec, checked, ctx, task),
                agent=agent_name(ctx, spec),
                branch=branch,
            )
            update = (
                (stopped_branch(visit) if spec.joins else None)
                or reuse(visit)
                or over_budget(visit)
            )
            if update is None:
                update = pause(visit) if spec.pauses else attempts(visit)
        if spec.branch is not None:  # the join writes the task, once, if choices changed it
            return as_branch_result(visit, update)
        if spec.joins:  # merged now: the branches' results leave the state
            consumed = [branch.name for branch in spec.joins]
            update = {**update, "branches": BranchResults(results=[], consumed=consumed)}
        return update if task is given else {**update, "task": task}

    node.__name__ = spec.name
    return node
