"""Fan-out: a route to branch nodes starts one parallel task per branch key.

Routers stay pure functions returning a node name, or a tuple of names for work of several
kinds side by side. When a name is a branch node's (``@node(..., branch=keys)``), the
conditional edge turns it into one LangGraph ``Send`` per key: each task gets the branch
node's declared inputs from the state plus the ``branch`` it runs, all of them run in the
same step, and the join they route to runs once they all finished. A tuple names branch
nodes only. A join waits for every branch node it declares, so they start together: a
route naming one of them starts the others beside it (``together``), and a new kind of
work beside research is one branch node and its join's ``joins=``, with no route changed.

A router may also return LangGraph's ``Send``s (``-> list[Send]``), or several node names
as LangGraph's conditional edges take them (``-> list[Literal["a", "b"]]``): ``mapped``
makes the nodes they start run as tasks side by side, each writing its own channels, and
the one node they go on to their join (``defer=True``); a Send's payload is checked and
completed from state (``graphs.declare.sent_tasks``).
"""

from __future__ import annotations

from collections import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, Union, cast, get_args, get_origin, get_type_hints

from langgraph.graph import END
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Send

from contracts import BranchTask
from graphs.context import RunContext
from graphs.declare import NodeSpec, given_runtime, keys_of, sent, sent_tasks, spends, whole_task
from graphs.errors import WiringError
from graphs.node_runner import ContextFactory, Router, on_route, resolve_context, state_type
from graphs.wiring import Route, targets

Edge = Callable[..., Any]


class PartialFanOut(ValueError):
    """A route to several nodes that are not all branch nodes."""


def one_task(state: Mapping[str, Any]) -> list[str]:
    """The keys of a branch node that runs once, beside branch nodes of other kinds."""
    return ["one"]


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
    keyed = [
        (spec, ["one"] if spec.branch is sent else keys_of(spec, state, runtime)) for spec in specs
    ]
    tasks = sum(len(keys) for spec, keys in keyed if spends(spec)) or 1
    nodes = [spec.name for spec in specs]
    return [
        (spec, BranchTask(node=spec.name, key=key, tasks=tasks, nodes=nodes))
        for spec, keys in keyed
        for key in keys
    ]


def fanning(
    route: Router,
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
        if isinstance(chosen, list):  # LangGraph's map: each Send one task of its node
            return sent_tasks(edge.__name__, chosen, state, branches)
        if isinstance(chosen, tuple) and len(chosen) == 1:
            chosen = chosen[0]
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
            f"router {router} returned {list(chosen)}, but its return type does not say it "
            f"starts {plain or 'nothing'} side by side with others: annotate it "
            f"-> list[Literal[{', '.join(repr(name) for name in chosen)}]] as LangGraph's "
            "conditional edges are, and wire each node on to the one node that joins them"
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


def returns_sends(route: object) -> bool:
    """Whether a router may return LangGraph ``Send``s: its return type names ``Send``."""
    if not callable(route):
        return False
    pending = [get_type_hints(route).get("return")]
    while pending:
        hint = pending.pop()
        if hint is Send:
            return True
        pending += get_args(hint)
    return False


def named_by(spec: NodeSpec, route: Route) -> tuple[str, ...]:
    """The nodes a wiring entry names: its router's ``Literal``, its next node, its Command's."""
    if route is None:
        return spec.goes_to
    if isinstance(route, str):
        return (route,)
    if isinstance(route, tuple):
        return route
    try:
        return targets(route)
    except TypeError:  # a router returning list[Send] only names no node
        return ()


def beside(route: Route) -> tuple[str, ...]:
    """The nodes a route may start side by side, as LangGraph's conditional edges do.

    A tuple it names, or the node names in a ``list[...]``, ``Sequence[...]`` or
    ``tuple[...]`` its router's return type holds.
    """
    if isinstance(route, tuple):
        return route
    if not callable(route):
        return ()
    found: list[str] = []
    pending = [(get_type_hints(route).get("return"), False)]
    while pending:
        hint, listed = pending.pop()
        args = get_args(hint)
        if listed and args and all(isinstance(arg, str) for arg in args):
            found += [arg for arg in args if arg not in found and arg != END]
            continue
        many = get_origin(hint) in (list, tuple, abc.Sequence)
        pending += [(arg, listed or many) for arg in args]
    return tuple(found)


def mapped(wiring: Sequence[tuple[NodeSpec, Route]]) -> list[tuple[NodeSpec, Route]]:
    """The wiring with LangGraph's parallel steps in it: tasks side by side, and their join.

    A node a route starts beside others (its router returns several names,
    ``-> list[Literal["a", "b"]]``) runs as one task of that step, and so does a node
    LangGraph's ``Send``s start: in a wiring with a router returning ``list[Send]``, a
    node no route names (and no run starts at), one task per Send. Either is marked
    ``branch=sent``: each task writes its outputs to their channels itself (a Send's
    through their reducers, as its tasks share them). The one node it goes on to joins
    them: it waits for every task (``defer=True``), lists them in its envelope and ends
    the run with a stopped task's error. Each Send router's ``Literal`` gains the nodes
    Sends start, so the build checks where it goes.
    """
    specs = {spec.name: spec for spec, _ in wiring}
    side_by_side = {
        name
        for _, route in wiring
        for name in beside(route)
        if name in specs and specs[name].branch is None and not specs[name].joins
    }
    starts = set(side_by_side)
    if any(returns_sends(route) for _, route in wiring):
        named = {name for spec, route in wiring for name in named_by(spec, route)}
        first = wiring[0][0].name
        starts |= {
            spec.name
            for spec, _ in wiring
            if spec.name not in named
            and spec.name != first
            and not spec.starts_on
            and spec.branch is None  # a join's branch nodes start beside the ones routes name
        }
    if not starts:
        return list(wiring)
    reduces: dict[str, list[NodeSpec]] = {}
    marked: dict[str, NodeSpec] = {}
    for spec, route in wiring:
        if spec.name not in starts:
            continue
        onward = named_by(spec, route)
        how = (
            "runs beside others (a route starts it side by side with them)"
            if spec.name in side_by_side
            else "is started by Sends (no route names it, and a router returns list[Send])"
        )
        if len(onward) != 1 or onward[0] == END or onward[0] == spec.name:
            raise WiringError(
                f"node {spec.name!r} {how}: its tasks go on to the one node that joins them, "
                f"wired as ({spec.name}, '<join>'), whose router goes on from there; its "
                f"route names {list(onward)}"
            )
        if spec.pauses:
            raise WiringError(
                f"node {spec.name!r} pauses, and {how}: tasks side by side cannot pause; "
                "route to it alone"
            )
        unmerged = sorted(name for name, channel in spec.outputs.items() if not channel.reducer)
        if unmerged and spec.name not in side_by_side:
            raise WiringError(
                f"node {spec.name!r} runs once per Send, its tasks side by side, and writes "
                f"{unmerged} with no reducer: two tasks' writes would collide; declare each "
                f"with its reducer, Annotated[Contract | None, reducer], in "
                f"{spec.writes.__name__}"
            )
        marked[spec.name] = replace(spec, branch=sent, task_view=spec.task_view or whole_task)
        reduces.setdefault(onward[0], []).append(marked[spec.name])
    check_distinct_writes(reduces)
    names = tuple(name for name in marked if name not in side_by_side)
    found: list[tuple[NodeSpec, Route]] = []
    for spec, route in wiring:
        if spec.name in reduces:
            spec = replace(spec, joins=(*spec.joins, *reduces[spec.name]))
        if returns_sends(route):
            route = sending(cast(Router, route), names)
        found.append((marked.get(spec.name, spec), route))
    return found


def check_distinct_writes(joined: Mapping[str, list[NodeSpec]]) -> None:
    """Tasks one node joins write a channel each, unless its reducer merges their writes.

    They run in one step: LangGraph would refuse the second write of a channel that keeps
    one value (``InvalidUpdateError``), after both tasks had done their work.
    """
    for join, tasks in joined.items():
        writers: dict[str, list[str]] = {}
        for spec in tasks:
            for name, channel in spec.outputs.items():
                if not channel.reducer:
                    writers.setdefault(name, []).append(spec.name)
        shared = {name: nodes for name, nodes in writers.items() if len(nodes) > 1}
        if shared:
            name, nodes = sorted(shared.items())[0]
            raise WiringError(
                f"nodes {nodes} run side by side before {join!r} and both write {name!r}, "
                f"which keeps one value: give each its own channel, or declare {name!r} with "
                "its reducer, Annotated[Contract | None, reducer]"
            )


def sending(route: Router, names: tuple[str, ...]) -> Router:
    """A router returning Sends, its ``Literal`` naming the nodes they may start."""
    if not names:
        raise WiringError(
            f"router {route.__name__} returns list[Send], but every node of the wiring is "
            "named by a route: a Send starts a node no route names; add the node it sends "
            "to the wiring with the node its tasks go on to, (node, '<reduce>')"
        )

    def sends(state: Mapping[str, Any], runtime: Any = None) -> Any:
        return given_runtime(route, state, runtime)

    sends.__name__ = sends.__qualname__ = route.__name__
    returns = cast(Any, Union)[get_type_hints(route)["return"], cast(Any, Literal)[names]]
    sends.__annotations__ = {"state": state_type(route), "return": returns}
    return sends
