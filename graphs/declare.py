"""One declaration per node: everything the graph, the runner and the app know about it.

A node is declared once, in its own module, with :func:`node`. The graph builder, the
input hash, the audit, fault points and the app's agent lookup all read the declaration;
nothing else lists node names or the channels a node touches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from graphs.channels import Channel, channels_of
from graphs.pauses import Pause
from graphs.state import BranchInput, JoinInput
from graphs.tools.declare import ToolSpec

if TYPE_CHECKING:
    from contracts import TaskSpec
    from graphs.node_call import NodeCall, NodeResult

    NodeBody = Callable[[NodeCall], NodeResult]
    Fingerprint = Callable[[Any, Any], str]
    TaskView = Callable[[TaskSpec, str | None], Any]

BranchKeys = Callable[[Mapping[str, Any]], list[str]]
"""The keys a fan-out starts one branch task for, from the state it fans out from."""

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


@dataclass(frozen=True)
class Retry:
    """How a failing attempt is tried again (attempts are capped by the task's budget)."""

    transient: bool = True
    """Retry a TransientError with doubling backoff."""
    repairs: int = 1
    """Attempts given to an agent whose output broke its contract."""


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
    retry: Retry | None = Retry()
    """None: one attempt (always so for pausing nodes)."""
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
    Several branch nodes are work of several kinds side by side: one route starts them all
    (it returns their names as a tuple)."""
    starts_on: str | None = None
    """A channel of the workflow input: a run whose input carries it starts here instead
    of at the wiring's first node (``revise_task`` starts on a ``revision``)."""
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
        """The channels read, with their contracts (a branch's key, a join's results too)."""
        found = dict(channels_of(self.reads))
        if self.branch is not None:
            found.update(channels_of(BranchInput))
        if self.joins:
            found.update(channels_of(JoinInput))
        return found

    @property
    def outputs(self) -> dict[str, Channel]:
        """The channels written, with their contracts."""
        return channels_of(self.writes)

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

    def __call__(self, body: NodeBody) -> NodeSpec:
        """The node: this declaration with its body."""
        declared = {item.name: getattr(self, item.name) for item in fields(Declaration)}
        spec = NodeSpec(**declared, body=body)
        spec.inputs, spec.outputs  # noqa: B018 - a schema that names no contract fails here
        return spec


node = Declared
"""Declare a node from its body: ``@node("name", reads=..., writes=..., ...)``.

``branch`` makes it a branch node (one parallel task per key; ``one_task`` for a node
that runs once beside others), ``joins`` a join that waits for the branch nodes it names.
"""
