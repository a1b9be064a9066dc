"""Fan-out: a route to branch nodes starts one parallel task per branch key.

Routers stay pure functions returning a node name, or a tuple of names for work of several
kinds side by side. When a name is a branch node's (``@node(..., branch=keys)``), the
conditional edge turns it into one LangGraph ``Send`` per key: each task gets the branch
node's declared inputs from the state plus the ``branch`` it runs, all of them run in the
same step, and the join they route to runs once they all finished. A tuple names branch
nodes only, and every branch node of each join it starts: a join waits for all of them.
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


class PartialFanOut(ValueError):
    """A route to several nodes that are not all branches of the joins it starts."""


def one_task(state: Mapping[str, Any]) -> list[str]:
    """The keys of a branch node that runs once, beside branch nodes of other kinds."""
    return ["one"]


def branch_keys(spec: NodeSpec, state: Mapping[str, Any]) -> list[str]:
    """The keys the fan-out to branch node ``spec`` starts one task each for."""
    assert spec.branch is not None
    keys = spec.branch(state)
    if not keys:
        raise EmptyFanOut(f"the fan-out to {spec.name!r} found no branch key in this state")
    if len(set(keys)) != len(keys):
        raise EmptyFanOut(f"the fan-out to {spec.name!r} gave a key twice: {keys}")
    return keys


def branch_sends(specs: list[NodeSpec], state: Mapping[str, Any]) -> list[Send]:
    """One task per key of each branch node in ``specs``, each with the inputs it declares.

    Every task learns how many the fan-out started, and which nodes: it may spend its share
    of the budget left, so parallel tasks together never spend more than one would.
    """
    keyed = [(spec, branch_keys(spec, state)) for spec in specs]
    tasks = sum(len(keys) for _, keys in keyed)
    nodes = [spec.name for spec in specs]
    return [
        Send(
            spec.name,
            {
                **{name: state[name] for name in spec.inputs if name in state and name != "branch"},
                "branch": BranchTask(node=spec.name, key=key, tasks=tasks, nodes=nodes),
            },
        )
        for spec, keys in keyed
        for key in keys
    ]


def fanning(
    route: Callable[[Mapping[str, Any]], str | tuple[str, ...]],
    branches: dict[str, NodeSpec],
    joins: dict[str, NodeSpec],
) -> Edge:
    """The conditional edge for ``route``: each branch node's name becomes its tasks.

    ``joins`` maps each branch node's name to its join.
    """

    def edge(state: Mapping[str, Any]) -> Any:
        chosen = route(state)
        if isinstance(chosen, str):
            spec = branches.get(chosen)
            return chosen if spec is None else branch_sends([spec], state)
        check_started_together(getattr(route, "__name__", "edge"), chosen, branches, joins)
        return branch_sends([branches[target] for target in chosen], state)

    edge.__name__ = getattr(route, "__name__", "edge")
    return edge


def check_started_together(
    router: str, chosen: tuple[str, ...], branches: dict[str, NodeSpec], joins: dict[str, NodeSpec]
) -> None:
    """Several targets are branch nodes, with every other branch node of their joins."""
    plain = [target for target in chosen if target not in branches]
    if plain or not chosen:
        raise PartialFanOut(
            f"router {router} returned {list(chosen)}: a route to several nodes starts branch "
            f"nodes only, joined by one join each; {plain or 'nothing'} is no branch node "
            "(declare it with branch=keys, or branch=one_task for one task)"
        )
    for target in chosen:
        left_out = [spec.name for spec in joins[target].joins if spec.name not in chosen]
        if left_out:
            raise PartialFanOut(
                f"router {router} returned {list(chosen)}, but join {joins[target].name!r} "
                f"also waits for {left_out}: a route starts all of a join's branches at once"
            )
