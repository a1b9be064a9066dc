"""Where the tests' extensions go in the project's wiring, as shipped or as adapted.

An extension of the tests (a fact check, a quote check, the page's pause) goes where a new
draft goes on to review. In the shipped wiring that is the Writer's route to the Reviewer;
a project that put a node of its own there (a check, a pause) routes to the Reviewer from
that node, and the extension goes after it. The place is derived from the wiring, not named
here, so a project's own additions leave the extensions' tests as they are. A project that
added the very node an extension adds (a page's walkthrough, applied) already has it there:
the extension's node takes its place.

A test that writes a review into a thread, or expects the route a verdict takes, starts at
the node that hands the review on (``hands_review_on``): the Reviewer as shipped, the join
waiting for it when a project runs a check of its own beside it.
"""

from __future__ import annotations

from graphs import NodeSpec, Wiring
from graphs.graph import routed, then
from graphs.node_runner import Router
from graphs.routing import detour, started_beside
from graphs.wiring import Route, rerouted, targets

REVIEWER = "reviewer"
WRITER = "writer"


def router(spec: NodeSpec, route: Route) -> Router:
    """The route as a router, a named next node (or branch nodes) included."""
    return route if callable(route) else then(route, branch=spec.branch is not None)


def ways_on(route: Route) -> tuple[str, ...]:
    """Where a route can go."""
    if callable(route):
        return targets(route)
    return (route,) if isinstance(route, str) else route


def drafts_to_review(wiring: Wiring) -> list[NodeSpec]:
    """The nodes whose route hands the Reviewer a new draft.

    Those are the routes into the Reviewer from nodes it reaches only through the Writer.
    One from a node the Reviewer reaches on its own (a person deciding, finalize sending back
    a person's edit) brings no new draft of the Writer's.
    """
    ways = {spec.name: ways_on(route) for spec, route in wiring}
    reached: set[str] = set()
    pending = [REVIEWER]
    while pending:
        for target in ways.get(pending.pop(), ()):
            if target not in reached and target != WRITER:
                reached.add(target)
                pending.append(target)
    return [spec for spec, _ in wiring if REVIEWER in ways[spec.name] and spec.name not in reached]


def hands_review_on(wiring: Wiring) -> str:
    """The node whose route takes the Reviewer's verdict on (to finalize, a round, a person).

    The Reviewer itself as shipped; a project that runs it as a branch beside a check of its
    own routes on from the join that waits for both, so a review a test writes into the
    thread (``update_state(..., as_node=...)``) or a route it expects starts there.
    """
    built = routed(wiring)  # a join the wiring's list of names implies is one too
    joins = [spec.name for spec, _ in built if REVIEWER in {branch.name for branch in spec.joins}]
    reviewer = next(spec for spec, _ in built if spec.name == REVIEWER)
    if reviewer.branch is None:
        return REVIEWER
    assert len(joins) == 1, f"the Reviewer runs as a branch joined by {joins}"
    return joins[0]


def before_review(
    wiring: Wiring, via: str | tuple[str, ...], *, besides: frozenset[str] = frozenset()
) -> Wiring:
    """``wiring`` with ``via`` where a new draft goes on to review (``drafts_to_review``).

    ``besides`` names nodes left as they route: the extension's own, when the project has
    them already.
    """
    found = [spec for spec in drafts_to_review(wiring) if spec.name not in besides]
    assert found or besides, "no route of the wiring hands the Reviewer a new draft"
    for spec in found:
        route = next(route for node, route in wiring if node.name == spec.name)
        wiring = rerouted(wiring, spec, detour(router(spec, route), REVIEWER, via=via))
    return wiring


def beside_the_reviewer(
    wiring: Wiring, added: tuple[tuple[NodeSpec, Route], ...]
) -> tuple[tuple[NodeSpec, Route], ...]:
    """The extension's routes to the Reviewer, starting what the project starts beside it.

    A project whose new drafts go on to the Reviewer beside a node of its own (a route
    returning both) gets the extension before both: its route to the Reviewer starts them
    together, as the project's did.
    """
    siblings = next(
        (
            found
            for spec in drafts_to_review(wiring)
            for node, route in wiring
            if node.name == spec.name and (found := started_beside(route, REVIEWER))
        ),
        (),
    )
    if not siblings:
        return added
    return tuple(
        (spec, detour(router(spec, route), REVIEWER, via=siblings))
        if REVIEWER in ways_on(route)
        else (spec, route)
        for spec, route in added
    )


def with_extension(
    wiring: Wiring, *added: tuple[NodeSpec, Route], via: str | tuple[str, ...] | None = None
) -> Wiring:
    """``wiring`` with the extension's nodes last: ``via`` (its first node) before review.

    A project whose wiring already has nodes of these names added them itself: the
    extension's nodes take their place, and a draft that could still go on to review
    without them (the project asks its pause only when a task says so) goes to ``via``
    instead, as the extension's tests expect of every draft.
    """
    names = {spec.name for spec, _ in added}
    first = via or added[0][0].name
    added = beside_the_reviewer(wiring, added)
    if not names & {spec.name for spec, _ in wiring}:
        return (*before_review(wiring, first), *added)
    replaced = (*((spec, route) for spec, route in wiring if spec.name not in names), *added)
    return before_review(replaced, first, besides=frozenset(names))
