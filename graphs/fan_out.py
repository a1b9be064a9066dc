"""Fan-out: a route to branch nodes starts one parallel task per branch key.

Routers stay pure functions returning a node name, or a tuple of names for work of several
kinds side by side. When a name is a branch node's (``@node(..., branch=keys)``), the
conditional edge turns it into one LangGraph ``Send`` per key: each task gets the branch
node's declared inputs from the state plus the ``branch`` it runs, all of them run in the
same step, and the join they route to runs once they all finished. A tuple names branch
nodes only. A join waits for every branch node it declares, so they start together: a
route naming one of them starts the others beside it (``together``), and a new kind of
work beside research is one branch node and its join's ``joins=``, with no route changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, cast

from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Send

from contracts import BranchTask
from graphs.context import RunContext
from graphs.declare import NodeSpec, given_runtime, keys_of
from graphs.node_runner import ContextFactory, Router, on_route, resolve_context, state_type
from graphs.wiring import targets

Edge = Callable[..., Any]


class PartialFanOut(ValueError):
    """A route to several nodes that are not all branch nodes."""


def one_task(state: Mapping[str, Any]) -> list[str]:
    """The keys of a branch node that runs once, beside branch nodes of other kinds."""
    return ["one"]


def spends(spec: NodeSpec) -> bool:
    """Whether a task of ``spec`` can spend budget: its agent's tokens, its tools' calls."""
    return spec.agent is not None or bool(spec.tools)


def branch_sends(
    specs: list[NodeSpec], state: Mapping[str, Any], runtime: Runtime[RunContext] | None = None
) -> list[Send]:
    """One task per key of each branch node in ``specs``, each with the inputs it declares.

    Every task learns how many the fan-out started that can spend, and which nodes: it may
    spend its share of the budget left, so parallel tasks together never spend more than one
    would. A kind of work with neither agent nor tools (an outline planned beside research)
    takes no share from the tasks that do spend.
    """
    return [
        Send(
            spec.name,
            {
                **{name: state[name] for name in spec.inputs if name in state and name != "branch"},
                "branch": task,
            },
        )
        for spec, task in branch_tasks(specs, state, runtime)
    ]


def branch_tasks(
    specs: list[NodeSpec], state: Mapping[str, Any], runtime: Runtime[RunContext] | None = None
) -> list[tuple[NodeSpec, BranchTask]]:
    """The task of each key of each branch node in ``specs``, as one fan-out starts them."""
    keyed = [(spec, keys_of(spec, state, runtime)) for spec in specs]
    tasks = sum(len(keys) for spec, keys in keyed if spends(spec)) or 1
    nodes = [spec.name for spec in specs]
    return [
        (spec, BranchTask(node=spec.name, key=key, tasks=tasks, nodes=nodes))
        for spec, keys in keyed
        for key in keys
    ]


def fanning(
    route: Callable[[Mapping[str, Any]], str | tuple[str, ...]],
    branches: dict[str, NodeSpec],
    default_context: ContextFactory | None = None,
) -> Edge:
    """The conditional edge for ``route``: each branch node's name becomes its tasks.

    A router or keys function that takes LangGraph's runtime gets the run's, its context
    the run's services, resolved as a node's are (``default_context``).
    """

    def edge(state: Mapping[str, Any]) -> Any:
        runtime: Runtime[RunContext] | None = get_runtime()  # None in update_state
        if runtime is not None:
            runtime = runtime.override(context=resolve_context(runtime, default_context))
        chosen = on_route(route, state, runtime)
        if isinstance(chosen, str) and chosen not in branches:
            return chosen
        if isinstance(chosen, str):
            return branch_sends([branches[chosen]], state, runtime)
        check_started_together(getattr(route, "__name__", "edge"), chosen, branches)
        return branch_sends([branches[target] for target in chosen], state, runtime)

    edge.__name__ = getattr(route, "__name__", "edge")
    return edge


def check_started_together(
    router: str, chosen: tuple[str, ...], branches: dict[str, NodeSpec]
) -> None:
    """Several targets are branch nodes (``together`` added their joins' others)."""
    plain = [target for target in chosen if target not in branches]
    if plain or not chosen:
        raise PartialFanOut(
            f"router {router} returned {list(chosen)}: a route to several nodes starts branch "
            f"nodes only, joined by one join each; {plain or 'nothing'} is no branch node "
            "(declare it with branch=keys, or branch=one_task for one task)"
        )


def side_by_side(nodes: Iterable[NodeSpec]) -> dict[str, tuple[str, ...]]:
    """Each branch node of a join that waits for several, with all of that join's, in order."""
    found: dict[str, tuple[str, ...]] = {}
    for spec in nodes:
        names = tuple(branch.name for branch in spec.joins)
        if len(names) > 1:
            found.update(dict.fromkeys(names, names))
    return found


def together(route: Router, siblings: Mapping[str, tuple[str, ...]]) -> Router:
    """``route``, starting every branch node of a join wherever it starts one of them.

    ``siblings`` is ``side_by_side`` of the wiring. A join waits for all of its branch
    nodes, so a route that starts one starts the others beside it, in the join's order:
    the routes to ``research`` start a kind of work the wiring adds beside it, with no
    route edited. Its ``Literal`` names them too, so the build checks where it goes. A
    route that starts no such branch node is returned as it is.
    """
    names = targets(route)
    if not any(name in siblings for name in names):
        return route

    def grown(chosen: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for name in chosen for n in siblings.get(name, (name,))))

    def started(state: Mapping[str, Any], runtime: Any = None) -> str | tuple[str, ...]:
        chosen = given_runtime(route, state, runtime)
        named = (chosen,) if isinstance(chosen, str) else chosen
        return chosen if grown(named) == named else grown(named)

    started.__name__ = started.__qualname__ = route.__name__
    returns = cast(Any, Literal)[grown(names)]
    reads = state_type(route)
    started.__annotations__ = {"state": reads, "return": returns}
    return started
