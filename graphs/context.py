"""Run-scoped services handed to nodes through ``Runtime[RunContext]``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from contracts import HumanRequest, RunChoices
from graphs.errors import MissingContext
from graphs.ports import ArtifactStore, RunLedger, SourceProbe, StepInfo
from graphs.tools import ToolFn, ToolProvider
from graphs.trace import UNTRACED, RunTrace


class AgentSlot(Protocol):
    """A node as far as choosing its agent goes: its name and the protocol it declares."""

    @property
    def name(self) -> str:
        """The node's name, the key of ``RunContext.agents``."""
        ...

    @property
    def agent(self) -> type | None:
        """The protocol the node's agent must implement (None: any agent)."""
        ...


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def untracked(step: StepInfo) -> contextlib.AbstractContextManager[object]:
    """The default: nobody in this process waits for a thread's nodes to stop."""
    return contextlib.nullcontext()


@dataclass(frozen=True)
class RunContext:
    """Everything a node needs besides state. Not persisted: pass it on every resume."""

    store: ArtifactStore
    agents: Mapping[str, Any]
    """The agent doing each node's work, by node name (the app picks them from settings)."""
    ledger: RunLedger
    sources: SourceProbe
    clock: Callable[[], datetime] = field(default=utc_now)
    sleep: Callable[[float], None] = field(default=time.sleep)
    tools: Mapping[str, ToolFn] = field(default_factory=dict)
    """The code of declared tools that bring none of their own, by tool name: the app takes
    it from the agents that provide it (``ToolProvider``), e.g. research's corpus read."""
    choices: RunChoices | None = None
    """Policies and limits the caller chose for this run (e.g. a Studio assistant's)."""
    node_running: Callable[[StepInfo], contextlib.AbstractContextManager[object]] = field(
        default=untracked
    )
    """Held while a node runs, from before it reads anything until it returns. A cancelled
    run's node goes on running in its worker thread until it returns; the dev server waits
    on this (by the step's thread) before it lets go of the thread's lock, so no second
    attempt can start beside it (``app/server/graph.py``). Fault injection learns by it which
    node a service call belongs to (``app/faults/points.py``)."""
    admitted: HumanRequest | None = None
    """The request whose decision this run resumes with, already checked against it by the
    caller (``Workflow.resume``): the pause asking exactly that takes the decision without
    checking it again. The served graph never sets it, so its pauses check every resume."""
    trace: RunTrace = UNTRACED
    """Spans of the run, its node attempts and their tool calls (``graphs/trace.py``); the
    app gives an OpenTelemetry one when the ``OTEL_*`` environment configures an exporter."""

    def agent_for(self, spec: AgentSlot) -> Any:
        """The agent for a declared node, checked against the protocol it declares."""
        agent = self.agents.get(spec.name)
        if agent is None or (spec.agent is not None and not isinstance(agent, spec.agent)):
            expected = spec.agent.__name__ if spec.agent else "an agent"
            raise MissingContext(
                f"node {spec.name!r} needs {expected}; the run context has "
                f"{type(agent).__name__ if agent is not None else 'none'}"
            )
        return agent

    def with_agent(self, node: str, agent: Any) -> RunContext:
        """The same services with another agent doing one node's work."""
        if node not in self.agents:
            raise KeyError(f"no agent for node {node!r}; agents: {sorted(self.agents)}")
        return replace(
            self,
            agents={**self.agents, node: agent},
            tools={**self.tools, **provided(agent, self.tools)},
        )


def provided(agent: object, names: Iterable[str]) -> dict[str, ToolFn]:
    """The code ``agent`` provides of the tools named.

    An agent that only wraps another (a test's, a fault's) provides none: the code the
    run had stays.
    """
    if not isinstance(agent, ToolProvider):
        return {}
    found = {name: agent.tool(name) for name in names}
    return {name: code for name, code in found.items() if code is not None}
