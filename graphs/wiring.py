"""What ``build_graph`` refuses: every omission in the wiring that LangGraph would accept.

LangGraph builds a node nothing routes to (it never runs), and a body's read of a channel
its node does not declare fails only when that line runs, after earlier nodes did their
work. Each such omission is refused here, naming the node, router or channel:

- two nodes with one name;
- a router target (a value of its ``Literal`` return type) that is no node;
- a router shared by a pause and another node: each pause routes on its own, so a node
  inserted after one decision cannot be silently skipped on the other's path;
- a node no route reaches from the first node (where a run starts);
- a branch node whose route is not the one join that waits for it, and a join waiting
  for a branch node the wiring does not have (it would wait for nothing, or forever);
- a body that reads a channel its input schema does not declare (``graphs.reads``).
"""

from __future__ import annotations

from typing import get_args, get_type_hints

from langgraph.graph import END

from graphs.declare import NodeSpec
from graphs.errors import WiringError
from graphs.node_runner import Router
from graphs.ports import request_channels
from graphs.reads import body_reads

Wiring = tuple[tuple[NodeSpec, Router], ...]
"""Nodes with their routers; the first node is where a run starts."""


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
        raise TypeError(f"router {route.__name__} must return a Literal of node names")
    return tuple(found)


def check_wiring(wiring: Wiring) -> dict[str, tuple[str, ...]]:
    """Each node's branch targets, once the wiring leaves nothing out (else WiringError)."""
    names = [spec.name for spec, _ in wiring]
    if not names:
        raise WiringError("the wiring has no node: a run would have nowhere to start")
    if len(set(names)) != len(names):
        raise WiringError(f"node names must be unique; got {names}")
    ends = {spec.name: targets(route) for spec, route in wiring}
    check_joined_branches(wiring)
    for spec, route in wiring:
        unknown = sorted(set(ends[spec.name]) - set(names) - {END})
        if unknown:
            raise WiringError(f"router {route.__name__} of {spec.name!r} names no node: {unknown}")
    check_own_routers(wiring)
    check_branches(wiring, ends)
    check_reachable(names[0], ends)
    for spec, _ in wiring:
        check_reads(spec)
    return ends


def check_own_routers(wiring: Wiring) -> None:
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


def check_joined_branches(wiring: Wiring) -> None:
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


def check_branches(wiring: Wiring, ends: dict[str, tuple[str, ...]]) -> None:
    """Each branch routes to the one join that waits for it; each join's branches exist.

    A branch's tasks run side by side and their join merges them: a branch routed anywhere
    else would run its successor once per task, and a join nobody's branch feeds would run
    on results that never come.
    """
    for spec, route in wiring:
        if spec.branch is None:
            continue
        joins = [other.name for other, _ in wiring if spec in other.joins]
        if list(ends[spec.name]) != joins or len(joins) != 1:
            raise WiringError(
                f"branch {spec.name!r} must route to the one join that waits for it; its "
                f"router {route.__name__} returns {list(ends[spec.name])}, and "
                f"{joins or 'no node'} joins it (declare the join with joins=({spec.name},))"
            )


def check_reachable(start: str, ends: dict[str, tuple[str, ...]]) -> None:
    """Every node is a target of some route taken from ``start``, else it could never run."""
    reached = {start}
    pending = [start]
    while pending:
        for target in ends[pending.pop()]:
            if target in ends and target not in reached:
                reached.add(target)
                pending.append(target)
    unreached = [name for name in ends if name not in reached]
    if unreached:
        raise WiringError(
            f"no route from {start!r} (where a run starts) reaches {unreached}: such a node "
            "would be built and never run; add it to a router's Literal return type"
        )


def check_reads(spec: NodeSpec) -> None:
    """Every channel the body, or its agent's request, reads is one its input schema declares."""
    declared = spec.inputs
    run = getattr(spec.agent, "run", None)
    request = get_type_hints(run).get("request") if run is not None else None
    if isinstance(request, type):
        for field_name, channel in request_channels(request).items():
            if channel not in declared:
                raise WiringError(
                    f"node {spec.name!r} hands its agent a {request.__name__} whose "
                    f"{field_name!r} comes from {channel!r}, which its input schema "
                    f"{spec.reads.__name__} does not declare; declared: {sorted(declared)}"
                )
    for channel, where in body_reads(spec.name, spec.body).items():
        if channel not in declared:
            raise WiringError(
                f"node {spec.name!r} reads {channel!r} at {where}, which its input schema "
                f"{spec.reads.__name__} does not declare; declared: {sorted(declared)}"
            )
