"""Fan-out: a route to a branch node starts one parallel task per branch key.

Routers stay pure functions returning a node name. When the name is a branch node's
(``@node(..., branch=keys)``), the conditional edge turns it into one LangGraph ``Send``
per key: each task gets the branch node's declared inputs from the state plus the
``branch`` it runs, all of them run in the same step, and the join they route to runs
once they all finished.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.types import Send

from contracts import BranchTask
from graphs.declare import NodeSpec

Edge = Callable[[Mapping[str, Any]], Any]


class EmptyFanOut(ValueError):
    """A fan-out whose keys function gave no key: nothing would run, the run would stop."""


def branch_sends(spec: NodeSpec, state: Mapping[str, Any]) -> list[Send]:
    """One task per key of the branch node ``spec``, each with the inputs it declares."""
    assert spec.branch is not None
    keys = spec.branch(state)
    if not keys:
        raise EmptyFanOut(f"the fan-out to {spec.name!r} found no branch key in this state")
    if len(set(keys)) != len(keys):
        raise EmptyFanOut(f"the fan-out to {spec.name!r} gave a key twice: {keys}")
    given = {name: state[name] for name in spec.inputs if name in state and name != "branch"}
    return [
        Send(spec.name, {**given, "branch": BranchTask(node=spec.name, key=key)}) for key in keys
    ]


def fanning(route: Callable[[Mapping[str, Any]], str], branches: dict[str, NodeSpec]) -> Edge:
    """The conditional edge for ``route``: a branch node's name becomes its tasks."""

    def edge(state: Mapping[str, Any]) -> Any:
        target = route(state)
        spec = branches.get(target)
        return target if spec is None else branch_sends(spec, state)

    edge.__name__ = getattr(route, "__name__", "edge")
    return edge
