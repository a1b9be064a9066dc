"""The boundary every node runs inside: context, validation, fault points and audit."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from pydantic import BaseModel

from contracts import NodeRun, TaskSpec, Usage
from graphs.boundary import read, require, validate_channel, validate_update
from graphs.context import RunContext
from graphs.errors import MissingContext
from graphs.ports import StepInfo
from graphs.state import CHANNEL_CONTRACTS

ContextFactory = Callable[[], RunContext]


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


NodeBody = Callable[[NodeCall], NodeResult]


def input_hash(state: Mapping[str, Any], channels: tuple[str, ...], task_version: int) -> str:
    """Hash of a node's input contracts plus the task version: equal hash, equal work."""
    payload: dict[str, Any] = {"task_version": task_version}
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


def contract_node(
    node_id: str,
    body: NodeBody,
    *,
    inputs: tuple[str, ...],
    default_context: ContextFactory | None = None,
) -> Callable[..., dict[str, Any]]:
    """Wrap a node body so every read and write is validated and every attempt audited."""

    def node(
        state: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]
    ) -> dict[str, Any]:
        ctx = resolve_context(runtime, default_context)
        task = require(state, "task", TaskSpec, node=node_id)
        step = step_info(config, node_id, task, ctx.fault)
        started = ctx.clock()
        began = time.perf_counter()
        ctx.fault(f"{node_id}:start")
        result = body(NodeCall(state=state, task=task, ctx=ctx, step=step))
        update = validate_update(node_id, result.update)
        record = NodeRun(
            task_version=task.task_version,
            node_id=node_id,
            attempt=1,
            status="succeeded",
            input_hash=input_hash(state, inputs, task.task_version),
            started_at=started,
            ended_at=ctx.clock(),
            duration_ms=round((time.perf_counter() - began) * 1000, 3),
            usage=result.usage,
            artifact_ids=result.artifact_ids,
        )
        ctx.ledger.record(step.thread_id, record)
        ctx.fault(f"{node_id}:before_return")
        return update

    node.__name__ = node_id
    return node
