"""The boundary every node runs inside: validation, reuse, budgets, pauses, retries, audit.

``run_node`` turns a declared node into a LangGraph node. Each call goes through four named
steps, in order, and the first one that produces the update wins:

1. ``reuse``: a finished attempt with the same input hash recorded its update (the node
   finished, then the process died before the checkpoint): replay it, work nothing twice.
2. ``over_budget``: no step may start once the thread's budget is spent.
3. ``pause``: a node that asks a person records its attempt only after the answer.
4. ``attempts``: run the body, retry transient failures with backoff, give invalid agent
   output one repair, audit every attempt.

A join first looks at its branches (``graphs.joins``): one that had to stop ends the run
with its own errors. Then ``Visit.hand_over`` asks the node's router (the same pure
function the graph's conditional edge runs on the same state) where the run goes, and
derives the handoff envelope from the state the next node will see.

Where each part lives: what a body sees (``NodeCall``, ``NodeResult``) in
``graphs.declare``; one visit and its hand-over in ``graphs.visit``; an attempt's ledger
entry in ``graphs.attempt_log``; reuse and the budget check in ``graphs.preflight``; the
body's attempts and pauses in ``graphs.attempts``; branches and joins in ``graphs.joins``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from contracts import BranchTask, Handoff, TaskSpec
from graphs.attempt_log import record_event
from graphs.attempts import attempts, pause
from graphs.boundary import CheckedState, read, require
from graphs.context import RunContext
from graphs.declare import NodeCall, NodeResult, NodeSpec
from graphs.errors import ContractViolation, MissingContext
from graphs.input_hash import hash_of, input_digests
from graphs.joins import as_branch_result, consumed, stopped_outcome
from graphs.ports import StepInfo
from graphs.preflight import over_budget, reuse
from graphs.visit import Router, Visit

__all__ = ["ContextFactory", "NodeCall", "NodeResult", "Router", "run_node"]

ContextFactory = Callable[[Any], RunContext]
"""Services for a run given the context its caller passed (JSON choices from a server)."""


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
    config: RunnableConfig, node: str, task: TaskSpec, branch: str | None = None
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


def agent_name(ctx: RunContext, spec: NodeSpec) -> str | None:
    """Which implementation does this node's work, for the audit."""
    if spec.agent is None:
        return None
    agent = ctx.agent_for(spec)
    describe = getattr(agent, "describe", None)
    return str(describe()) if callable(describe) else type(agent).__name__


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


def visit_update(visit: Visit) -> dict[str, Any]:
    """The update of one visit: the first of the runner's steps that produces one."""
    if visit.spec.joins and (outcome := stopped_outcome(visit.spec, visit.state)) is not None:
        return visit.hand_over(NodeResult({"outcome": outcome}))
    update = reuse(visit) or over_budget(visit)
    if update is not None:
        return update
    return pause(visit) if visit.spec.pauses else attempts(visit)


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

    def node(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> dict[str, Any]:
        ctx = resolve_context(runtime, default_context)
        checked = CheckedState(state)
        given = require(checked, "task", TaskSpec, node=spec.name)
        branch = require(checked, "branch", BranchTask, node=spec.name) if spec.branch else None
        step = step_info(config, spec.name, given, branch.key if branch else None)
        with ctx.node_running(step):
            task = chosen_task(ctx, given, step, audit=branch is None)
            if task is not given:  # a copy with the choices in force: validated when first read
                checked = CheckedState({**state, "task": task})
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
            )
            update = visit_update(visit)
        if branch is not None:  # the join writes the task, once, if choices changed it
            return as_branch_result(spec, branch, visit.key, update)
        if spec.joins:  # merged now: the branches' results leave the state
            update = consumed(spec, update)
        return update if task is given else {"task": task, **update}  # a revision's wins

    node.__name__ = spec.name
    return node
