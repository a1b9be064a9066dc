"""The boundary every node runs inside: validation, reuse, budgets, pauses, retries, audit.

``run_node`` turns a declared node into a LangGraph node. Each call goes through four named
steps, in order, and the first one that produces the update wins:

1. ``reuse``: a finished attempt with the same input hash recorded its update (the node
   finished, then the process died before the checkpoint): replay it, work nothing twice.
2. ``over_budget``: no step may start once the thread's budget is spent.
3. ``pause``: a node that asks a person records its attempt only after the answer.
4. ``attempts``: run the body, retry transient failures with backoff, give invalid agent
   output one repair, audit every attempt.

A join first looks at its branches (``stopped_outcome``): one that had to stop ends the run
with its own errors. Then ``Visit.hand_over`` asks the node's router (the same pure
function the graph's conditional edge runs on the same state) where the run goes, and
derives the handoff envelope from the state the next node will see.

The module reads in that order: the LangGraph node (``run_node``), one visit and its
hand-over (``Visit``), the two checks before the body (``reuse``, ``over_budget``), the
body's attempts and pauses, an attempt's ledger entry (``Attempt``) and the note it
leaves on a revised task, then branches and joins as the runner sees them: a branch's
update is kept under its own key in the ``branches`` channel, so tasks of one step never
write the same channel; a join's envelope lists every branch, and its update takes the
results it merged out of the channel. What a body sees (``NodeCall``, ``NodeResult``) is in
``graphs.declare``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, get_type_hints

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base.id import UUID as CheckpointUUID
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel
from typing_extensions import is_typeddict

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
from graphs.boundary import CheckedState, read, read_declared, require, validate_channel
from graphs.budget import Tally, branch_share, exhausted, fanned_by, left, overrun
from graphs.channels import Channel, channels_of
from graphs.context import RunContext
from graphs.declare import (
    REPAIRS,
    NodeCall,
    NodeResult,
    NodeSpec,
    branch_results,
    given_runtime,
    is_transient,
    keys_of,
    run_body,
    sent,
    sent_tasks,
    tries_again,
    wait_before,
)
from graphs.errors import (
    ContractViolation,
    IntegrityError,
    MissingContext,
    Omitted,
    StaleInput,
    TransientError,
    WiringError,
)
from graphs.freshness import OWN_RULES, refuse_changed
from graphs.handoffs import ENVELOPE_READS, derive_handoff
from graphs.human import ANSWERED, Answered, ask, decision_mark
from graphs.input_hash import hash_of, input_digests
from graphs.outcomes import run_outcome
from graphs.pauses import PauseDeclarationError
from graphs.ports import RunLedger, StepInfo
from graphs.state import RunnerWrites

__all__ = [
    "SEALED",
    "Attempt",
    "ContextFactory",
    "NodeCall",
    "NodeResult",
    "Router",
    "Visit",
    "node_schema",
    "on_route",
    "origins",
    "route_reads",
    "record_event",
    "reused_from",
    "run_node",
    "sealed_by",
    "state_type",
]

RUNNER_FIX = "add it to graphs.handoffs.ENVELOPE_READS, which every node's runner reads"
"""What a runner's read beyond its node's input schema needs: the runner's own reads."""
UUID_EPOCH = datetime(1582, 10, 15, tzinfo=UTC)
"""Where a UUIDv6's time (in 100 ns steps) counts from."""
ContextFactory = Callable[[Any], RunContext]
"""Services for a run given the context its caller passed (JSON choices from a server)."""


def run_node(
    spec: NodeSpec,
    route: Router,
    default_context: ContextFactory | None = None,
    nodes: Mapping[str, NodeSpec] | None = None,
) -> Callable[..., dict[str, Any]]:
    """A LangGraph node for a declared one.

    Every read and write is validated, every attempt audited, and the route ``route`` will
    take is recorded in the handoff the node returns, with the limits the next node
    declares (``nodes``: the graph's, by name).
    """
    schema = node_schema(spec, route)
    reader = f"the runner of node {spec.name!r}"

    def node(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> dict[str, Any]:
        ctx = resolve_context(runtime, default_context)
        checked = CheckedState(state, schema=schema, reader=reader, fix=RUNNER_FIX)
        given = require(checked, "task", TaskSpec, node=spec.name)
        branch = require(checked, "branch", BranchTask, node=spec.name) if spec.branch else None
        step = step_info(config, spec.name, given, branch.key if branch else None, runtime)
        with ctx.node_running(step):
            task = chosen_task(ctx, given, step, audit=branch is None)
            if task is not given:  # a copy with the choices in force: validated when first read
                checked = CheckedState(
                    {**state, "task": task}, schema=schema, reader=reader, fix=RUNNER_FIX
                )
            refuse_older_envelope(spec, checked, task)
            visit = Visit(
                spec=spec,
                route=route,
                state=checked,
                task=task,
                ctx=ctx,
                step=step,
                key=hash_of(digests := input_digests(spec, checked, ctx, task)),
                inputs=digests,
                agent=agent_name(ctx, spec),
                branch=branch,
                nodes=nodes or {},
                runtime=Runtime(context=ctx) if runtime is None else replace(runtime, context=ctx),
            )
            update = visit_update(visit)
        if branch is not None:  # the join writes the task, once, if choices changed it
            return as_branch_result(spec, branch, visit.key, update)
        if spec.joins:  # merged now: the branches' results leave the state
            update = consumed(spec, update)
        return update if task is given else {"task": task, **update}  # a revision's wins

    node.__name__ = spec.name
    return node


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
    runtime: Runtime[Any] | None = None,
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
        begun_at=checkpoint_time(runtime),
        decision_timeout=task.policies.decision_timeout,
    )


def checkpoint_time(runtime: Runtime[Any] | None) -> datetime | None:
    """When the checkpoint a step runs from was made, or None outside a checkpointed run.

    LangGraph's checkpoint ids are time-ordered UUIDv6s, and a resumed step runs from the
    checkpoint it paused in, so this is the same instant on every re-run of the step.
    """
    info = getattr(runtime, "execution_info", None)
    checkpoint = getattr(info, "checkpoint_id", None)
    if not isinstance(checkpoint, str):
        return None
    try:
        uid = CheckpointUUID(checkpoint)
    except ValueError:
        return None
    if uid.version != 6:
        return None
    return UUID_EPOCH + timedelta(microseconds=uid.time // 10)


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
        made = ctx.choices.describe()
        record_event(
            ctx.ledger,
            step.thread_id,
            task_version=task.task_version,
            label=f"choose: {made}",
            detail=made,
            clock=ctx.clock,
        )
    return chosen


def refuse_older_envelope(spec: NodeSpec, state: CheckedState, task: TaskSpec) -> None:
    """An envelope made for another task version is never consumed as the current one's."""
    if "handoff" not in spec.inputs:
        return
    handed = read(state, "handoff", Handoff, node=spec.name)
    if handed is not None and handed.task_version != task.task_version:
        raise ContractViolation(
            f"node {spec.name!r} was handed an envelope for task v{handed.task_version} by "
            f"{handed.from_node!r}, but the task is v{task.task_version}: work done for "
            "another version of the task is not consumed as this one's",
            node=spec.name,
            channel="handoff",
            fields=["task_version"],
        )


def agent_name(ctx: RunContext, spec: NodeSpec) -> str | None:
    """Which implementation does this node's work, for the audit."""
    if spec.agent is None:
        return None
    agent = ctx.agent_for(spec)
    describe = getattr(agent, "describe", None)
    return str(describe()) if callable(describe) else type(agent).__name__


def visit_update(visit: Visit) -> dict[str, Any]:
    """The update of one visit: the first of the runner's steps that produces one."""
    stopped = stopped_outcome(visit.spec, visit.state, visit.runtime) if visit.spec.joins else None
    if stopped is not None:
        return visit.hand_over(NodeResult({"outcome": with_draft(visit, stopped)}))
    update = reuse(visit) or over_budget(visit)
    if update is not None:
        return update
    inputs = {
        channel: read_declared(visit.state, declared, node=visit.spec.name)
        for channel, declared in visit.spec.inputs.items()
        if channel not in OWN_RULES
    }
    try:
        refuse_changed(visit.spec.name, inputs, visit.ctx.store, visit.step.thread_id)
    except (IntegrityError, StaleInput) as refusal:  # recorded, so history says why it waits
        Attempt(visit, visit.step).finish(error=("stale_input", refusal.message))
        raise
    return pause(visit) if visit.spec.pauses else attempts(visit)


Routed = str | Sequence[str] | list[Send]
"""Where a router sends the run: a node's name, the names of nodes to start side by side
(as a tuple once routed), or LangGraph's ``Send``s, one task each (map-reduce)."""
Router = Callable[[Any], Routed]
"""Where the run goes from a state (its TypedDict, or the whole state as a Mapping)."""


@functools.lru_cache(maxsize=4096)
def route_reads(route: Router) -> frozenset[str] | None:
    """The channels a router reads: the keys of its state parameter's TypedDict.

    That is how LangGraph infers a conditional edge's input schema. Any other annotation
    (``Mapping[str, Any]``, the state) reads the whole state.
    """
    hint = state_type(route)
    return frozenset(get_type_hints(hint)) if is_typeddict(hint) else None


@functools.lru_cache(maxsize=4096)
def state_type(route: Router) -> Any:
    """The annotation of a router's state parameter; a router that wraps another keeps it."""
    parameters = list(inspect.signature(route).parameters)
    hint = get_type_hints(route).get(parameters[0]) if parameters else None
    return Mapping[str, Any] if hint is None else hint


def node_schema(spec: NodeSpec, route: Router) -> frozenset[str] | None:
    """The channels LangGraph hands a node: its inputs, its router's and its envelope's.

    The runner asks the node's router where the run goes, and derives the envelope from
    the state the next node will see, so both read here too. A router that reads the
    whole state gives its node the whole state (None).
    """
    routed = route_reads(route)
    if routed is None:
        return None
    return frozenset(spec.inputs) | routed | ENVELOPE_READS


def on_route(
    route: Router, state: Mapping[str, Any], runtime: Runtime[RunContext] | None = None
) -> str | tuple[str, ...] | list[Send]:
    """Where ``route`` goes from ``state``, reading only what the router declares.

    A router that takes ``runtime`` gets LangGraph's, as a conditional edge does.
    """
    view = state if isinstance(state, CheckedState) else CheckedState(state)
    name = getattr(route, "__name__", "router")
    kind = getattr(state_type(route), "__name__", "its TypedDict")
    fix = f"add it to {kind}, or type the router's state Mapping[str, Any] to read it all"
    found = given_runtime(
        route, view.restricted(route_reads(route), f"router {name}", fix), runtime
    )
    if isinstance(found, str):
        return found
    if isinstance(found, tuple | list) and found and all(isinstance(t, str) for t in found):
        return tuple(found)  # nodes started side by side, as LangGraph takes a list of names
    if isinstance(found, list) and all(isinstance(target, Send) for target in found):
        return found
    raise TypeError(
        f"router {name} returned {type(found).__name__} {str(found)[:200]}: a router returns "
        "the name of the node the run goes to, the names of nodes started side by side "
        "(-> list[Literal[...]]), or a list of LangGraph Sends, [Send('<node>', {...})], "
        "annotated -> list[Send] (docs/adapt.md, Map-reduce with Send)"
    )


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
    runtime: Runtime[RunContext] | None = None
    """LangGraph's runtime for the task, its ``context`` this visit's services."""

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
            runtime=self.runtime,
        )

    @functools.cached_property
    def writable(self) -> dict[str, Channel]:
        """What this node (or the runner for it) may write, each channel with its contract."""
        return {**self.spec.outputs, **RUNNER_CHANNELS}

    def validate(self, update: Mapping[str, Any]) -> dict[str, Any]:
        """The update, each channel checked against what this node (or the runner) writes."""
        return {
            channel: validate_channel(self.spec.name, channel, value, self.writable)
            for channel, value in update.items()
        }

    def perform(self, call: NodeCall) -> tuple[NodeResult, dict[str, Any]]:
        """Run the body: its result, with the tool calls it made, and the update handed over."""
        result = run_body(call)
        if call.spec.joins and not result.refused:
            check_merged(call.spec, self.state, call.merged, self.runtime)
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
            target = on_route(self.route, self.state, self.runtime)
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
        after = self.state.updated(
            update, {name: ch.reducer for name, ch in self.writable.items() if ch.reducer}
        )
        if result.goto is None:
            target = on_route(self.route, after, self.runtime)
        else:  # the body's Command: its router follows the envelope made here
            ended = read(after, "outcome", RunOutcome, node=self.spec.name) is not None
            target = END if ended else result.goto
        if isinstance(target, list):  # checked here, so a wrong Send fails this attempt
            sent_tasks(getattr(self.route, "__name__", "router"), target, {}, self.nodes)
            target = tuple(dict.fromkeys(send.node for send in target))
            target = target[0] if len(target) == 1 else target
        first = target if isinstance(target, str) else target[0]
        names = (target,) if isinstance(target, str) else target
        for name in names:
            if name in self.nodes and self.nodes[name].branch not in (None, sent):
                fans_out(self.nodes[name], after, self.runtime)
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
            handoff = joined_handoff(self.spec, self.state, handoff, self.runtime)
        update["handoff"] = handoff
        return update

    def stop(self, step: StepInfo, error: ErrorDetail, *, retryable: bool) -> dict[str, Any]:
        """The run stops here, with ``error``: the outcome handed over as the update."""
        outcome = stop_outcome(self.state, self.task, step, error, retryable=retryable)
        return self.hand_over(NodeResult({"outcome": outcome}))


def fans_out(branch: NodeSpec, state: CheckedState, runtime: Runtime[RunContext] | None) -> None:
    """Refuse a route to a fan-out with no key in the attempt that takes it (``keys_of``).

    The fan-out's edge runs after the node's attempt is recorded as finished: refused
    there, a resume would replay that attempt and be refused again. Refused here, the
    attempt fails and a resume runs the node again. Keys read from channels this node is
    not handed are left to the edge.
    """
    try:
        keys_of(branch, state, runtime)
    except Omitted:
        return


def with_draft(visit: Visit, stopped: RunOutcome) -> RunOutcome:
    """A branch's stop as the join ends the run with it: partial with the thread's draft.

    A branch task sees only what its fan-out sent it, never the draft; the join sees the
    thread's state, so a run stopped in a branch after the writer ends partial with its
    draft, as a stop anywhere else does.
    """
    draft = read(visit.state, "draft", DraftArticle, node=visit.spec.name)
    if draft is None or stopped.draft is not None:
        return stopped
    return run_outcome(
        visit.task,
        visit.step,
        TaskState.COMPLETED,
        "partial",
        draft=draft,
        errors=stopped.errors,
        retryable=stopped.retryable,
        reason=stopped.reason,
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


def reuse(visit: Visit) -> dict[str, Any] | None:
    """Replay the update a finished attempt with this very input recorded.

    The node finished, then the process died before the checkpoint: its work is not done
    twice. Or a revised task left the node's inputs as they were: its result holds. The
    envelope is made again from the state now (with the tool calls the work made), so it
    serves the task version in force, never the one the result was first made for.

    The visit's tally (which the budget check reads next anyway) counts the attempts on
    this very input: with none, there is no result to look up.
    """
    if visit.tally.attempts == 0:
        return None
    stored = visit.ctx.ledger.result(visit.step.thread_id, visit.spec.name, visit.key)
    if stored is None:
        return None
    update = visit.validate(json.loads(stored))
    made: Handoff | None = update.pop("handoff", None)  # kept for a node routing itself
    if visit.spec.goes_to and made is None:
        return None  # where its Command went is not recorded: it runs again
    origin = worked_run(visit)
    receipts = made.tool_receipts if made else origin.tool_receipts if origin else []
    goto = None
    if visit.spec.goes_to and made is not None:
        goto = tuple(made.next_nodes) if made.next_nodes else made.next_allowed_action
    update = visit.hand_over(NodeResult(update, receipts=receipts, goto=goto))
    Attempt(visit, visit.step).finish(reused=True)
    return update


def over_budget(visit: Visit) -> dict[str, Any] | None:
    """Stop before a step the budget no longer allows (terminal nodes and joins always run).

    A join merges work its branches already paid for: stopping it would lose their
    (partial) results, and the next node's step is where the spent budget stops the run.
    A node that can spend no tokens or tool calls (no agent, no tools) and asks no person
    is stopped by a passed deadline only: spent tokens stop the next node that could spend.
    """
    spec = visit.spec
    if spec.terminal or spec.joins:
        return None
    problem = exhausted(visit.task, visit.tally.spent, visit.ctx.clock())
    if problem is None:
        return None
    idle = spec.agent is None and not spec.tools and spec.pauses is None
    if idle and problem.field != "budget.deadline":
        return None
    Attempt(visit, visit.step).finish(error=("budget_exhausted", problem.detail))
    published = read(visit.state, "outcome", RunOutcome, node=visit.spec.name)
    if published is not None and published.article is not None:
        # A node after publishing (an index, a notification) is skipped, never unpublishes:
        # the run keeps the outcome that names its article, and the audit says why.
        return visit.hand_over(NodeResult({}))
    return visit.stop(visit.step, problem, retryable=False)


def pause(visit: Visit) -> dict[str, Any]:
    """Run a node that asks a person; its attempt is written once the answer is in.

    Such a node re-runs from its start on every resume, so it records nothing before the
    decision arrives (the ``interrupt()`` inside the body raises until then).
    """
    answered = Answered()
    token = ANSWERED.set(answered)
    call = visit.call(visit.step)
    try:
        with visit.ctx.store.batch():
            result, update = visit.perform(call)
    except (GraphBubbleUp, WiringError, MissingContext, PauseDeclarationError):
        raise  # waiting, or a declaration no decision can mend
    except Exception as error:
        if answered.decision is None:
            raise
        decision_failed(visit, call, answered, error)
        raise
    finally:
        ANSWERED.reset(token)
    Attempt(visit, visit.step).finish(result, update=update)
    return update


def decision_failed(visit: Visit, call: NodeCall, answered: Answered, error: Exception) -> None:
    """The node failed on the decision it was given: audited, then asked again.

    LangGraph would replay the decision on every resume and the node fail the same way;
    the failed attempt names the request (``decision_mark``), so ``ask`` lets that decision
    be replayed and asks for a new one: the thread waits for a decision again.
    """
    assert answered.pause is not None and answered.request is not None
    assert answered.decision is not None
    kind: ErrorKind = "invalid_output" if isinstance(error, ContractViolation) else "internal"
    message = error.message if isinstance(error, ContractViolation) else repr(error)
    failed = Attempt(visit, visit.step, call)  # charged what its agent and tools spent
    failed.record = failed.record.model_copy(
        update={"inputs": [*failed.record.inputs, decision_mark(answered.request)]}
    )
    failed.finish(error=(kind, f"decision {answered.decision.action!r}: {message}"))
    ask(answered.pause, answered.request)  # raises GraphInterrupt: the new question


def attempts(visit: Visit) -> dict[str, Any]:
    """Run the body until it succeeds, or its retries or repairs run out."""
    spec, ctx, task = visit.spec, visit.ctx, visit.task
    policy = spec.retry
    tally = visit.tally
    attempt = 1 + tally.attempts
    repairs = REPAIRS if policy is not None else 0
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
        except ContractViolation as error:
            current.finish(error=("invalid_output", error.message))
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
        except GraphInterrupt as paused:  # a pausing node runs in ``pause``, never here
            omitted = (
                f"node {spec.name!r} called interrupt() but declares no pause: the answer "
                "would reach it unchecked and unrecorded; declare "
                f"@node({spec.name!r}, ..., pauses=Pause(...)) and ask through "
                "graphs.human.ask (docs/adapt.md, Add a pause)"
            )
            current.finish(error=("internal", omitted))
            raise Omitted(omitted) from paused
        except GraphBubbleUp:
            current.finish_waiting()
            raise
        except Exception as error:
            if not is_transient(policy, error):
                current.finish(error=("internal", f"{type(error).__name__}: {error}"))
                raise
            message = error.message if isinstance(error, TransientError) else repr(error)
            current.finish(error=("transient", message))
            if policy is not None and tries_again(policy, attempt, task.budget.max_attempts):
                ctx.sleep(wait_before(policy, attempt))
                attempt += 1
                continue
            detail = ErrorDetail(
                code=ErrorCode.TRANSIENT,
                detail=f"{spec.name} failed {attempt} times: {message}"[:2000],
            )
            return visit.stop(step, detail, retryable=True)
        except BaseException as error:
            current.finish(error=("internal", f"{type(error).__name__}: {error}"))
            raise
        current.finish(result, update=update)
        return update


class Attempt:
    """One ledger entry: written as 'running' when it starts, finished exactly once.

    Its span (``RunContext.trace``) opens and ends with the row: the shared no-op unless
    the app traces the run.
    """

    def __init__(self, visit: Visit, step: StepInfo, call: NodeCall | None = None) -> None:
        self.visit = visit
        self.step = step
        self.call = call
        """The body's view, whose tool calls a failed attempt still records."""
        self.began = time.perf_counter()
        self.why = version_note(visit)
        """Why this pass runs on a revised task (read before its own row is written)."""
        self.record = NodeRun(
            task_version=step.task_version,
            node_id=step.node,
            attempt=step.attempt,
            status="running",
            input_hash=visit.key,
            inputs=[f"{name}:{digest[:12]}" for name, digest in sorted(visit.inputs.items())],
            agent=visit.agent,
            started_at=visit.ctx.clock(),
        )
        self.seq = visit.ctx.ledger.start(step.thread_id, self.record)
        self.span = visit.ctx.trace.attempt(step, self.record)
        self._receipted = threading.Lock()
        if call is not None:
            call.receipted = self.receipted

    def receipted(self, receipt: ToolReceipt) -> None:
        """A tool call of this attempt ended: its receipt (and cost) go on the running row.

        Written as the call ends, not when the attempt does: a process killed mid-attempt
        leaves the calls it made (a write with an effect outside among them) in the audit,
        and the resume marks the row abandoned with them. ``finish`` replaces the list with
        the attempt's complete one.
        """
        with self._receipted:
            receipts = [*self.record.tool_receipts, receipt]
            calls = sum(made.cost for made in receipts)
            self.record = self.record.model_copy(
                update={"tool_receipts": receipts, "usage": Usage(tool_calls=calls)}
            )
            self.visit.ctx.ledger.finish(self.step.thread_id, self.seq, self.record)

    def finish(
        self,
        result: NodeResult | None = None,
        *,
        update: dict[str, Any] | None = None,
        usage: Usage | None = None,
        error: tuple[ErrorKind, str] | None = None,
        reused: bool = False,
    ) -> None:
        """Record how the attempt ended; a succeeded one stores the update it returns.

        A failed attempt is charged for the tool calls it made and what its agent's runs
        reported, and receipts them. A refusal (``NodeResult.refused``) is a failed attempt
        that says why, and stores nothing a later visit could reuse as the node's work.
        """
        if result is not None and result.refused:
            error, update = ("refused_input", result.note or "input refused"), None
        receipts: list[ToolReceipt] = []
        if self.call is not None and result is None:
            spent, receipts = self.call.agent_spent()
            usage = (usage or Usage()) + spent
            toolbox = self.call.opened_tools()
            if toolbox is not None:
                usage = toolbox.charged(usage)
                receipts = [*toolbox.receipts, *receipts]
        spent = result.usage if result else usage or Usage()
        final = self.record.model_copy(
            update={
                "overrun": overrun(spent, self.step.tool_calls_left, self.step.tokens_left),
                "status": "failed" if error else "succeeded",
                "ended_at": self.visit.ctx.clock(),
                "duration_ms": round((time.perf_counter() - self.began) * 1000, 3),
                "usage": spent,
                "artifact_ids": result.artifact_ids if result else [],
                "checked_inputs": result.checked_inputs if result else [],
                "tool_receipts": result.receipts if result else receipts,
                "error": NodeError(kind=error[0], detail=error[1][:4000]) if error else None,
                "reused": reused,
                "note": (result.note if result else None)
                or (reuse_note(self.visit) if reused else self.why),
            }
        )
        # The envelope is left out: a reuse derives it again, for the task version then;
        # a node that routes itself keeps it, as the record of where its Command went.
        kept = "" if self.visit.spec.goes_to else "handoff"
        stored = None if update is None else _dump(update, leave_out=kept)
        try:
            self.visit.ctx.ledger.finish(self.step.thread_id, self.seq, final, stored)
        finally:  # the span ends (and stops being current) even if the row cannot be written
            self.span.ended(final)

    def finish_waiting(self) -> None:
        """The node paused for a human (an interrupt); it will run again on resume."""
        final = self.record.model_copy(
            update={"status": "waiting_user", "ended_at": self.visit.ctx.clock()}
        )
        try:
            self.visit.ctx.ledger.finish(self.step.thread_id, self.seq, final)
        finally:
            self.span.ended(final)


def _dump(update: dict[str, Any], *, leave_out: str) -> str:
    """The update as one JSON object (contracts serialised by pydantic, not re-walked)."""
    members = ",".join(
        f"{json.dumps(channel)}:{_json(value)}"
        for channel, value in sorted(update.items())
        if channel != leave_out
    )
    return "{" + members + "}"


def _json(value: Any) -> str:
    """A channel's value as JSON: a contract, a list of them (a list channel), or plain."""
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
        return "[" + ",".join(item.model_dump_json() for item in value) + "]"
    return json.dumps(value)


def record_event(
    ledger: RunLedger,
    thread_id: str,
    *,
    task_version: int,
    label: str,
    detail: str,
    clock: Callable[[], datetime],
) -> None:
    """An audit row for what happened to a thread outside any node (a cancel, a run choice).

    It is started and finished at once, as a succeeded attempt named ``label``, so
    ``history`` shows it in order among the node runs; ``detail`` is hashed as its input.
    """
    now = clock()
    event = NodeRun(
        task_version=task_version,
        node_id=label[:100],
        attempt=1,
        status="succeeded",
        input_hash=hashlib.sha256(detail.encode()).hexdigest(),
        started_at=now,
        ended_at=now,
        duration_ms=0,
    )
    ledger.finish(thread_id, ledger.start(thread_id, event), event)


SEALED = "sealed once ended: "
"""The audit label of a thread that, once it has ended, is never revised in place (an A2A
task: a refinement is a new task). What follows it names who sealed it."""


def sealed_by(runs: list[NodeRun]) -> str | None:
    """Who sealed the thread these audit rows are of, if anyone (see ``SEALED``)."""
    for run in runs:
        if run.node_id.startswith(SEALED):
            return run.node_id.removeprefix(SEALED)
    return None


def reuse_note(visit: Visit) -> str | None:
    """The task version whose pass recorded the result being reused."""
    origin = worked_run(visit)
    return reused_from(origin.task_version) if origin else None


def worked_run(visit: Visit) -> NodeRun | None:
    """The attempt that did the work a reuse replays: its version and its tool calls."""
    origin = [run for run in _own_runs(visit) if run.input_hash == visit.key and _worked(run)]
    return origin[-1] if origin else None


def reused_from(version: int) -> str:
    """The audit's note on a pass that reused the result task ``version`` recorded."""
    return f"reused (task v{version})"


def origins(runs: list[NodeRun], node: str) -> dict[str, int]:
    """The task version whose pass recorded each input hash's result (the latest wins)."""
    return {
        run.input_hash: run.task_version for run in runs if run.node_id == node and _worked(run)
    }


def version_note(visit: Visit) -> str | None:
    """Why a revised task's first pass of this node runs: which inputs changed, or new."""
    version = visit.step.task_version
    if version == 1:
        return None
    runs = _own_runs(visit)
    if any(run.task_version == version for run in runs):
        return None  # not this version's first pass: its own reason, if any, says why
    earlier = [run for run in runs if _worked(run)]
    if not earlier:
        return f"new for task v{version}"
    last = earlier[-1]
    before = dict(item.split(":", 1) for item in last.inputs)
    changed = [
        name for name, digest in sorted(visit.inputs.items()) if before.get(name) != digest[:12]
    ]
    return (
        f"re-run for task v{version}: {', '.join(changed) or 'its inputs'} changed "
        f"since v{last.task_version}"
    )


def _own_runs(visit: Visit) -> list[NodeRun]:
    """The node's finished passes on the thread (a branch's: of its own key)."""
    branch = (visit.inputs.get("branch") or "")[:12]
    return [
        run
        for run in visit.ctx.ledger.runs(visit.step.thread_id)
        if run.node_id == visit.spec.name
        and run.status != "running"
        and (not branch or f"branch:{branch}" in run.inputs)
    ]


def _worked(run: NodeRun) -> bool:
    return run.status == "succeeded" and not run.reused


def stopped_outcome(
    join: NodeSpec, state: Mapping[str, Any], runtime: Runtime[RunContext] | None
) -> RunOutcome | None:
    """The outcome a join ends the run with when one of its branches had to stop.

    Every branch that stopped contributes its errors, in fan-out order; the first one's
    reason is the run's. The join's own work does not run: it would merge a part.
    """
    stops = [
        result.outcome
        for branch in join.joins
        for result in branch_results(join, branch, state, runtime).values()
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


def joined_handoff(
    spec: NodeSpec,
    state: Mapping[str, Any],
    handoff: Handoff,
    runtime: Runtime[RunContext] | None,
) -> Handoff:
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
        for key, result in branch_results(spec, branch, state, runtime).items()
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
    A task a Send started writes its outputs to their channels itself, each through its
    reducer (as LangGraph's map-reduce does); its envelope and stop are kept here all
    the same, for the node reducing them.
    """
    written: dict[str, Any] = {
        channel: value
        for channel, value in sorted(update.items())
        if channel in spec.outputs and isinstance(value, BaseModel)
    }
    said = [
        value.summary() for value in written.values() if callable(getattr(value, "summary", None))
    ]
    mapped = spec.branch is sent
    result = BranchResult(
        node=spec.name,
        key=branch.key,
        input_hash=input_hash,
        outputs={}
        if mapped
        else {name: value.model_dump_json() for name, value in written.items()},
        summary="; ".join(said)[:500],
        handoff=update["handoff"],
        outcome=update.get("outcome"),
    )
    reduced = {channel: value for channel, value in update.items() if channel in spec.outputs}
    return {**(reduced if mapped else {}), "branches": BranchResults(results=[result])}


def check_merged(
    join: NodeSpec,
    state: Mapping[str, Any],
    merged: set[tuple[str, str]],
    runtime: Runtime[RunContext] | None,
) -> None:
    """A join's body read every output its branches produced (else ``Omitted``).

    The join's update takes the branches' results out of the state (``consumed``): an
    output its body never asked for (``NodeCall.branch_outputs``) would be gone, and the
    run would go on as if that branch had not run.
    """
    dropped = sorted(
        (branch.name, channel)
        for branch in join.joins
        for result in branch_results(join, branch, state, runtime).values()
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
