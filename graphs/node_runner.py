"""The boundary every node runs inside: validation, budgets, retries, reuse and audit.

Everything a node does passes through ``contract_node``: inputs are re-validated, the
budget is checked before the step starts, each attempt is recorded in the run ledger,
transient failures are retried with backoff, invalid agent output gets one repair attempt,
and a finished attempt's result is reused if the node is re-run with the same input
(which is what happens after a crash between the node's end and its checkpoint).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from pydantic import BaseModel

from contracts import (
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    ErrorKind,
    NodeError,
    NodeRun,
    RunOutcome,
    TaskSpec,
    TaskState,
    Usage,
)
from graphs.boundary import read, require, validate_channel, validate_update
from graphs.budget import exhausted, remaining, used
from graphs.context import RunContext
from graphs.errors import ContractViolation, MissingContext, TransientError
from graphs.ports import StepInfo
from graphs.state import CHANNEL_CONTRACTS

ContextFactory = Callable[[], RunContext]
Fingerprint = Callable[[RunContext, TaskSpec], str]
TERMINAL_NODES = frozenset({"finalize", "conclude"})
"""Nodes that record the outcome; they run even when the budget is spent."""
MAX_BACKOFF_SECONDS = 5.0


@dataclass
class NodeCall:
    """What a node body gets: validated inputs, services, and where it runs."""

    state: Mapping[str, Any]
    task: TaskSpec
    ctx: RunContext
    step: StepInfo

    def read(self, channel: str) -> Any:
        """A channel's value as its contract (or None), re-validated."""
        return read(self.state, channel, CHANNEL_CONTRACTS[channel], node=self.step.node)

    def accept(self, channel: str, value: Any) -> Any:
        """An agent's result, validated as the channel's contract before anything uses it."""
        return validate_channel(self.step.node, channel, value, direction="returned")

    def require(self, channel: str) -> Any:
        """A channel that must be present here, re-validated."""
        return require(self.state, channel, CHANNEL_CONTRACTS[channel], node=self.step.node)


@dataclass
class NodeResult:
    """A node body's state update plus what it cost."""

    update: dict[str, Any]
    usage: Usage
    artifact_ids: list[str]
    checked_inputs: list[str] = field(default_factory=list)


NodeBody = Callable[[NodeCall], NodeResult]


def input_hash(
    state: Mapping[str, Any], channels: tuple[str, ...], task_version: int, extra: str = ""
) -> str:
    """Hash of a node's input contracts plus the task version: equal hash, equal work."""
    payload: dict[str, Any] = {"task_version": task_version, "extra": extra}
    for channel in channels:
        value = state.get(channel)
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        payload[channel] = value
    text = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def resolve_context(
    runtime: Runtime[RunContext] | None, fallback: ContextFactory | None
) -> RunContext:
    """The run's services: from the runtime context, else the graph's default factory."""
    context = runtime.context if runtime is not None else None
    if isinstance(context, RunContext):
        return context
    if fallback is not None:
        return fallback()
    raise MissingContext(
        "no RunContext: pass context=RunContext(...) to invoke/stream (on every resume too), "
        "or build the graph with build_graph(default_context=...)"
    )


def step_info(
    config: RunnableConfig, node: str, task: TaskSpec, fault: Callable[[str], None] | None = None
) -> StepInfo:
    """Where this node runs, from LangGraph's config."""
    configurable = config.get("configurable") or {}
    metadata = config.get("metadata") or {}
    thread_id = str(configurable.get("thread_id") or task.task_id)
    step = metadata.get("langgraph_step")
    return StepInfo(
        thread_id=thread_id,
        node=node,
        step=int(step) if isinstance(step, int) else -1,
        task_version=task.task_version,
        fault_hook=fault,
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


class _Attempt:
    """One ledger entry: written as 'running' when it starts, finished exactly once."""

    def __init__(self, ctx: RunContext, step: StepInfo, key: str) -> None:
        self.ctx = ctx
        self.step = step
        self.began = time.perf_counter()
        self.record = NodeRun(
            task_version=step.task_version,
            node_id=step.node,
            attempt=step.attempt,
            status="running",
            input_hash=key,
            started_at=ctx.clock(),
        )
        self.seq = ctx.ledger.start(step.thread_id, self.record)

    def finish(
        self,
        *,
        usage: Usage | None = None,
        artifact_ids: list[str] | None = None,
        checked_inputs: list[str] | None = None,
        error: tuple[ErrorKind, str] | None = None,
        result: dict[str, Any] | None = None,
        reused: bool = False,
    ) -> None:
        final = self.record.model_copy(
            update={
                "status": "failed" if error else "succeeded",
                "ended_at": self.ctx.clock(),
                "duration_ms": round((time.perf_counter() - self.began) * 1000, 3),
                "usage": usage or Usage(),
                "artifact_ids": artifact_ids or [],
                "checked_inputs": checked_inputs or [],
                "error": NodeError(kind=error[0], detail=error[1][:4000]) if error else None,
                "reused": reused,
            }
        )
        stored = None if result is None else _dump_update(result)
        self.ctx.ledger.finish(self.step.thread_id, self.seq, final, stored)

    def finish_waiting(self) -> None:
        """The node paused for a human (an interrupt); it will run again on resume."""
        final = self.record.model_copy(
            update={"status": "waiting_user", "ended_at": self.ctx.clock()}
        )
        self.ctx.ledger.finish(self.step.thread_id, self.seq, final)


def _spent(error: BaseException) -> Usage | None:
    """What a failed attempt had already consumed (agents attach it to their errors)."""
    usage = getattr(error, "usage", None)
    return usage if isinstance(usage, Usage) else None


def _dump_update(update: dict[str, Any]) -> str:
    return json.dumps(
        {
            channel: value.model_dump(mode="json") if isinstance(value, BaseModel) else value
            for channel, value in update.items()
        },
        sort_keys=True,
    )


def contract_node(
    node_id: str,
    body: NodeBody,
    *,
    inputs: tuple[str, ...],
    default_context: ContextFactory | None = None,
    fingerprint: Fingerprint | None = None,
    pauses: bool = False,
) -> Callable[..., dict[str, Any]]:
    """Wrap a node body so every read and write is validated and every attempt audited."""

    def node(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> dict[str, Any]:
        ctx = resolve_context(runtime, default_context)
        task = require(state, "task", TaskSpec, node=node_id)
        base = step_info(config, node_id, task, ctx.fault)
        extra = fingerprint(ctx, task) if fingerprint else ""
        key = input_hash(state, inputs, task.task_version, extra)
        ctx.fault(f"{node_id}:start")

        stored = ctx.ledger.result(base.thread_id, node_id, key)
        if stored is not None:
            update = validate_update(node_id, json.loads(stored))
            _Attempt(ctx, base, key).finish(reused=True)
            return update

        runs = ctx.ledger.runs(base.thread_id)
        if node_id not in TERMINAL_NODES:
            problem = exhausted(task, used(runs), ctx.clock())
            if problem is not None:
                _Attempt(ctx, base, key).finish(error=("budget_exhausted", problem.detail))
                return {"outcome": stop_outcome(state, task, base, problem, retryable=False)}

        if pauses:
            # A node that calls interrupt() re-runs from its start on every resume: it may
            # record nothing before the decision arrives, so its attempt is written after.
            result = body(NodeCall(state=state, task=task, ctx=ctx, step=base))
            update = validate_update(node_id, result.update)
            _Attempt(ctx, base, key).finish(
                usage=result.usage,
                artifact_ids=result.artifact_ids,
                checked_inputs=result.checked_inputs,
                result=update,
            )
            return update

        attempt = 1 + sum(1 for run in runs if run.node_id == node_id and run.input_hash == key)
        repaired = False
        while True:
            spent = used(ctx.ledger.runs(base.thread_id))
            step = replace(
                base,
                attempt=attempt,
                tool_calls_left=remaining(task.budget.max_tool_calls, spent.tool_calls),
                tokens_left=remaining(task.budget.max_tokens, spent.tokens),
            )
            current = _Attempt(ctx, step, key)
            try:
                ctx.fault(f"{node_id}:attempt")
                result = body(NodeCall(state=state, task=task, ctx=ctx, step=step))
                update = validate_update(node_id, result.update)
            except TransientError as error:
                current.finish(usage=_spent(error), error=("transient", error.message))
                if attempt < task.budget.max_attempts:
                    delay = min(MAX_BACKOFF_SECONDS, ctx.backoff_seconds * 2 ** (attempt - 1))
                    ctx.sleep(delay)
                    attempt += 1
                    continue
                detail = ErrorDetail(
                    code=ErrorCode.TRANSIENT,
                    detail=f"{node_id} failed {attempt} times: {error.message}"[:2000],
                )
                return {"outcome": stop_outcome(state, task, step, detail, retryable=True)}
            except ContractViolation as error:
                current.finish(usage=_spent(error), error=("invalid_output", error.message))
                if not repaired and attempt < task.budget.max_attempts:
                    repaired = True
                    attempt += 1
                    continue
                detail = ErrorDetail(
                    code=ErrorCode.INVALID_OUTPUT,
                    detail=error.message[:2000],
                    field=error.fields[0] if error.fields else None,
                )
                return {"outcome": stop_outcome(state, task, step, detail, retryable=False)}
            except GraphBubbleUp:
                current.finish_waiting()
                raise
            except BaseException as error:
                current.finish(error=("internal", f"{type(error).__name__}: {error}"))
                raise
            current.finish(
                usage=result.usage,
                artifact_ids=result.artifact_ids,
                checked_inputs=result.checked_inputs,
                result=update,
            )
            ctx.fault(f"{node_id}:before_return")
            return update

    node.__name__ = node_id
    return node
