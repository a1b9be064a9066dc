"""What ``build_graph`` refuses: every omission in the wiring that LangGraph would accept.

LangGraph builds a node nothing routes to (it never runs), and an agent request field
whose channel the node does not declare would fail only when the node runs, after earlier
nodes did their work. Each such omission is refused here, naming the node, router or
channel:

- two nodes with one name;
- a router target (a value of its ``Literal`` return type) that is no node;
- a router shared by a pause and another node: each pause routes on its own, so a node
  inserted after one decision cannot be silently skipped on the other's path;
- a node no route reaches from the first node (where a run starts);
- a branch node whose route is not the one join that waits for it, and a join waiting
  for a branch node the wiring does not have (it would wait for nothing, or forever); a
  route that starts one of a join's branch nodes starts the others beside it
  (``graphs.fan_out.together``), so a join never runs on part of its branches;
- an agent request field read from a channel the node's input schema does not declare;
- two different pauses of one kind (a decision names its pause by kind; nodes that pause
  the same way share one ``Pause``);
- a ``read_by`` naming no node, or a node whose agent's request has no ``inputs`` to
  carry what it is declared to read.

Nothing here reads a body's source. A body's own read of an undeclared channel fails the
first run that reaches it (``NodeCall.read`` raises ``Omitted``), and a pause's branch on
an action it does not declare is a type error (``Pause.chosen`` and mypy's strict
equality, see ``graphs.pauses``).

``contribute_reads`` applies ``read_by`` before the checks: a node's outputs join the
reads of the nodes it names, so those nodes' input hashes cover them and their agents
receive them, with no edit to the reading node.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields, replace
from typing import Any, TypeVar, get_args, get_type_hints

from langgraph.graph import END
from typing_extensions import TypedDict

from graphs.agents import CONTRIBUTED, TOOLS, request_channels
from graphs.declare import NodeSpec
from graphs.errors import WiringError
from graphs.node_runner import Router
from graphs.pauses import Pause

Route = Router | str | tuple[str, ...] | None
"""A node's router, or the name of the one node it goes to next (unless the run stops), or
the branch nodes it starts side by side; None for a node whose body routes itself, returning
``Command[Literal[...]]``."""
Wiring = tuple[tuple[NodeSpec, Route], ...]
"""Nodes with their routes; the first node is where a run starts."""
RouteT = TypeVar("RouteT")


def request_of(spec: NodeSpec) -> type | None:
    """The request type the node's agent takes (its ``run``'s ``request`` parameter)."""
    run = getattr(spec.agent, "run", None)
    request = get_type_hints(run).get("request") if run is not None else None
    return request if isinstance(request, type) else None


def contribute_reads(
    wiring: Sequence[tuple[NodeSpec, RouteT]],
) -> list[tuple[NodeSpec, RouteT]]:
    """Each node with the channels other nodes' ``read_by`` add to its reads.

    Each join waits for the wiring's own declarations of its branch nodes (``joining``).
    """
    names = {spec.name for spec, _ in wiring}
    added: dict[str, dict[str, Any]] = {}
    for spec, _ in wiring:
        for reader in spec.read_by:
            if reader not in names or reader == spec.name:
                raise WiringError(
                    f"node {spec.name!r} declares read_by={reader!r}, which is no other node; "
                    f"nodes: {sorted(names - {spec.name})}"
                )
            added.setdefault(reader, {}).update(spec.outputs)
    found: list[tuple[NodeSpec, RouteT]] = []
    for spec, route in wiring:
        extra = {
            name: channel
            for name, channel in added.get(spec.name, {}).items()
            if name not in spec.inputs
        }
        if extra:
            request = request_of(spec)
            if request is None or CONTRIBUTED not in {item.name for item in fields(request)}:
                raise WiringError(
                    f"node {spec.name!r} is declared to read {sorted(extra)} (read_by), but "
                    f"its agent takes no request with an {CONTRIBUTED!r} field to carry them; "
                    f"give the request `{CONTRIBUTED}: ... = contributed_inputs()`"
                )
            hints = get_type_hints(spec.reads) | {
                name: channel.annotation | None for name, channel in extra.items()
            }
            reads: type = TypedDict(spec.reads.__name__, hints)  # type: ignore[misc]
            spec = replace(spec, reads=reads, contributed=tuple(extra))
        found.append((spec, route))
    nodes = {spec.name: spec for spec, _ in found}
    return [(starting_over(joining(spec, nodes), nodes), route) for spec, route in found]


def starting_over(spec: NodeSpec, nodes: dict[str, NodeSpec]) -> NodeSpec:
    """A node that starts the task over, writing every channel the other nodes write.

    A channel with a reducer is left out: a write merges into it rather than clearing it.
    """
    if not spec.starts_over:
        return spec
    hints = get_type_hints(spec.writes, include_extras=True)
    for other in nodes.values():
        others = get_type_hints(other.writes, include_extras=True)
        for name, channel in other.outputs.items():
            if name not in hints and channel.reducer is None:
                hints[name] = others[name]
    writes: type = TypedDict(spec.writes.__name__, hints, total=False)  # type: ignore[misc]
    return replace(spec, writes=writes)


def joining(spec: NodeSpec, nodes: dict[str, NodeSpec]) -> NodeSpec:
    """A join waiting for its branch nodes as the wiring declares them, matched by name.

    The join's ``joins=`` names its branch nodes' module declarations; the wiring may give
    one more than its module did (a tool, through ``dataclasses.replace``), and ``read_by``
    widens what nodes read.
    """
    if not spec.joins:
        return spec
    return replace(spec, joins=tuple(nodes.get(branch.name, branch) for branch in spec.joins))


def rerouted(wiring: Wiring, spec: NodeSpec, route: Router) -> Wiring:
    """``wiring`` with the router of ``spec``'s node replaced by ``route`` (e.g. a ``detour``).

    The node is found by name: a wiring may hold its own declaration of a shipped node
    (given a tool, say), which is the node ``spec`` names all the same.
    """
    if all(node.name != spec.name for node, _ in wiring):
        raise WiringError(f"node {spec.name!r} is not in the wiring; nothing to reroute")
    return tuple((node, route if node.name == spec.name else old) for node, old in wiring)


def targets(route: Router) -> tuple[str, ...]:
    """A router's branch targets: the ``Literal`` values of its return type."""
    found: list[str] = []
    pending = [get_type_hints(route)["return"]]
    while pending:
        hint = pending.pop()
        args = get_args(hint)
        if args and all(isinstance(arg, str) for arg in args):
            found += [arg for arg in args if arg not in found]
        else:
            pending += list(args)
    if not found:
        raise TypeError(
            f"router {route.__name__} must return a Literal of node names, or LangGraph's "
            "Sends annotated -> list[Send] (docs/adapt.md, Map-reduce with Send)"
        )
    return tuple(found)


def check_wiring(
    wiring: Sequence[tuple[NodeSpec, Router]], start: Router, *, returned: Collection[str] = ()
) -> dict[str, tuple[str, ...]]:
    """Each node's branch targets, once the wiring leaves nothing out (else WiringError).

    ``start`` is the router a run starts on (``entry_router``).
    """
    names = [spec.name for spec, _ in wiring]
    if len(set(names)) != len(names):
        raise WiringError(f"node names must be unique; got {names}")
    ends = {spec.name: targets(route) for spec, route in wiring}
    check_joined_branches(wiring)
    for spec, route in wiring:
        unknown = sorted(set(ends[spec.name]) - set(names) - {END})
        if unknown:
            raise WiringError(f"router {route.__name__} of {spec.name!r} names no node: {unknown}")
    check_own_routers(wiring)
    check_pauses(wiring)
    check_branches(wiring, ends)
    check_reachable(targets(start), ends)
    for spec, _ in wiring:
        check_reads(spec)
        check_tools_reach_agent(spec)
    check_outputs_read(wiring, ends, returned)
    return ends


def check_outputs_read(
    wiring: Sequence[tuple[NodeSpec, Router]],
    ends: dict[str, tuple[str, ...]],
    returned: Collection[str],
) -> None:
    """Every channel a node hands on is read by some node (or returned to the caller).

    A node's output that no node declares it reads reaches no agent and no input hash:
    the work runs and nothing after it sees it. A branch's outputs go to its join (see
    ``graphs.node_runner.check_merged``); a node that only ends the run writes for the caller,
    and one that starts the task over clears what the others wrote.
    """
    read = {name for spec, _ in wiring for name in spec.inputs} | set(returned)
    for spec, _ in wiring:
        if spec.branch is not None or spec.starts_over or set(ends[spec.name]) <= {END}:
            continue
        unread = sorted(set(spec.outputs) - read)
        if unread:
            raise WiringError(
                f"node {spec.name!r} writes {unread}, which no node reads: nothing after it "
                f"would see its work; name the nodes whose agents read it, "
                f"@node({spec.name!r}, ..., read_by=('<node>',)), add it to a reading "
                "node's input schema, or return it to the caller (WorkflowOutput, in the "
                "wiring's module)"
            )


def check_tools_reach_agent(spec: NodeSpec) -> None:
    """A node that gives tools to its agent hands them over in the agent's request."""
    request = request_of(spec)
    if not spec.tools or request is None or TOOLS in {item.name for item in fields(request)}:
        return
    raise WiringError(
        f"node {spec.name!r} declares tools {[tool.name for tool in spec.tools]}, but its "
        f"agent's request {request.__name__} has no {TOOLS!r} field to carry them, so its "
        f"agent could never call them; give {request.__name__} "
        f"`{TOOLS}: Toolbox | None = None` (NodeCall.delegate fills it)"
    )


def check_own_routers(wiring: Sequence[tuple[NodeSpec, Router]]) -> None:
    """A pause's router serves that pause alone."""
    for spec, route in wiring:
        if not spec.pauses:
            continue
        others = [other.name for other, shared in wiring if shared is route and other is not spec]
        if others:
            raise WiringError(
                f"pause {spec.name!r} shares its router {route.__name__} with {others}: each "
                "pause routes on its own, so a node added after one decision cannot be "
                "skipped on the other's path; give each its own router"
            )


def check_joined_branches(wiring: Sequence[tuple[NodeSpec, Router]]) -> None:
    """Every branch a join waits for is in the wiring (else the join would wait for nothing)."""
    specs = {spec.name: spec for spec, _ in wiring}
    for spec, _ in wiring:
        for branch in spec.joins:
            if specs.get(branch.name) is not branch:
                raise WiringError(
                    f"join {spec.name!r} waits for branch {branch.name!r}, which is not in "
                    "the wiring: add (branch, router) to it, its router returning "
                    f"{spec.name!r}"
                )


def check_branches(
    wiring: Sequence[tuple[NodeSpec, Router]], ends: dict[str, tuple[str, ...]]
) -> None:
    """Each branch routes to the one join that waits for it.

    A branch's tasks run side by side and their join merges them: a branch routed anywhere
    else would run its successor once per task, and a join nobody's branch feeds would run
    on results that never come.
    """
    for spec, route in wiring:
        if spec.branch is None:
            continue
        joins = [other.name for other, _ in wiring if spec.name in {b.name for b in other.joins}]
        if list(ends[spec.name]) != joins or len(joins) != 1:
            raise WiringError(
                f"branch {spec.name!r} must route to the one join that waits for it; its "
                f"router {route.__name__} returns {list(ends[spec.name])}, and "
                f"{joins or 'no node'} joins it (declare the join with joins=({spec.name},))"
            )


def check_reachable(start: Sequence[str], ends: dict[str, tuple[str, ...]]) -> None:
    """Every node is a target of some route taken from ``start``, else it could never run."""
    reached = set(start)
    pending = list(start)
    while pending:
        for target in ends[pending.pop()]:
            if target in ends and target not in reached:
                reached.add(target)
                pending.append(target)
    unreached = [name for name in ends if name not in reached]
    if unreached:
        raise WiringError(
            f"no route from {list(start)} (where a run starts) reaches {unreached}: such a node "
            "would be built and never run; add it to a router's Literal return type"
        )


def check_reads(spec: NodeSpec) -> None:
    """Every channel the node's agent request reads is one its input schema declares.

    The body's own reads are checked where they happen (``NodeCall.read``): a request's
    fields are known from its type, a body's reads only from running it.
    """
    declared = spec.inputs
    request = request_of(spec)
    if request is not None:
        for field_name, channel in request_channels(request).items():
            if channel not in declared:
                raise WiringError(
                    f"node {spec.name!r} hands its agent a {request.__name__} whose "
                    f"{field_name!r} comes from {channel!r}, which its input schema "
                    f"{spec.reads.__name__} does not declare; declared: {sorted(declared)}"
                )


def pauses_of(wiring: Wiring) -> dict[str, Pause]:
    """The wiring's pauses by kind: what decisions exist, derived from the declarations.

    The Python API, the fleet and the CLI look a waiting request's pause up here, by the
    request's ``request_kind``; ``check_pauses`` makes sure each kind is declared once
    (nodes that pause the same way share it).
    """
    return {spec.pauses.kind: spec.pauses for spec, _ in wiring if spec.pauses is not None}


def check_pauses(wiring: Sequence[tuple[NodeSpec, Router]]) -> None:
    """One declaration per pause kind: a decision names its pause by kind.

    Several nodes may pause the same way (two nodes asking to confirm a write): they share
    one ``Pause``, so a decision of that kind means the same to each. Two different pauses
    under one kind would leave a decision's meaning to whichever node happens to wait.
    """
    kinds: dict[str, NodeSpec] = {}
    for spec, _ in wiring:
        pause = spec.pauses
        if pause is None:
            continue
        other = kinds.setdefault(pause.kind, spec)
        if other.pauses != pause:
            raise WiringError(
                f"pauses {other.name!r} and {spec.name!r} declare two different pauses of kind "
                f"{pause.kind!r}: a decision names its pause by kind; give one its own kind, "
                "or give both nodes the same Pause"
            )
