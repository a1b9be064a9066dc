"""What the routers share.

Whether the run stopped, whether research waits for a person, where a node that refused
its changed inputs sends the run, and a router that puts a node before another (``detour``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast, get_args

from langgraph.graph import END
from typing_extensions import TypedDict

from contracts import (
    DecisionLog,
    DraftArticle,
    FreshnessReport,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskRevision,
    TaskSpec,
)
from graphs.boundary import read, require
from graphs.declare import NodeSpec, given_runtime
from graphs.fan_out import beside
from graphs.node_runner import Router, state_type
from graphs.stale import only_revised_draft, research_changed
from graphs.wiring import Route, Wiring, targets

STOP: Literal["__end__"] = "__end__"
assert STOP == END


class RouteState(TypedDict, total=False):
    """What the workflow's routers read, handed to them and to the nodes they route from.

    Annotate a router's state with it, or with a TypedDict of your own: LangGraph hands the
    router, and the runner of the node it routes from, these channels. A router whose
    state is ``Mapping[str, Any]`` reads the whole state, and so does its node.
    """

    task: TaskSpec
    revision: TaskRevision | None
    outcome: RunOutcome | None
    freshness: FreshnessReport | None
    research: ResearchBundle | None
    draft: DraftArticle | None
    review: ReviewResult | None
    decisions: DecisionLog | None


def stopped(state: Mapping[str, Any]) -> bool:
    """A node recorded an outcome (budget spent, retries exhausted): the run ends now."""
    return read(state, "outcome", RunOutcome, node="router") is not None


def needs_approval(task: TaskSpec, bundle: ResearchBundle) -> bool:
    """A person approves research when the policy says so or questions are still open."""
    return task.policies.require_approval or bool(bundle.open_questions)


def refused(state: Mapping[str, Any], node: str) -> FreshnessReport | None:
    """The report of a node that found its inputs changed and did not consume them."""
    report = read(state, "freshness", FreshnessReport, node="router")
    if report is not None and report.node == node and report.verdict != "fresh":
        return report
    return None


Reevaluate = Literal["research", "writer", "reviewer", "stale_decision"]


def route_stale(state: Mapping[str, Any], report: FreshnessReport, allowed: Any) -> Reevaluate:
    """Changed inputs: ask a person (policy ask), else go back to what must be redone.

    ``allowed`` is the ``Literal`` of targets the refusing node can reach: research output
    changed → research; a person's newer draft → review it; a draft gone → write again.
    """
    task = require(state, "task", TaskSpec, node="route_stale")
    target: Reevaluate
    if task.policies.on_stale == "ask":
        target = "stale_decision"
    elif research_changed(report):
        target = "research"
    else:
        target = "reviewer" if only_revised_draft(report) else "writer"
    if target not in get_args(allowed):
        raise ValueError(f"{report.node} refused {report.describe()}; it cannot go to {target}")
    return target


def detour(route: Router, target: str, *, via: str | tuple[str, ...]) -> Router:
    """``route``, going to ``via`` wherever it went to ``target``: a node put before another.

    ``via`` is a node, or the branch nodes started side by side. Where ``route`` starts
    ``target`` beside others (it returns a list of names), ``via`` goes before them all:
    the route goes to ``via``, which goes on to that list (``placed_before``). The new
    router's ``Literal`` is derived from ``route``'s, with ``target`` (and the nodes beside
    it) replaced by ``via``, so it names exactly where it can go; a ``target`` ``route``
    never returns is a TypeError here.
    """
    before = targets(route)
    if target not in before:
        raise TypeError(f"router {route.__name__} never goes to {target!r}; it goes to {before}")
    names = (via,) if isinstance(via, str) else via
    siblings = started_beside(route, target)
    kept = tuple(name for name in before if name != target and name not in siblings)

    def routed(state: Mapping[str, Any], runtime: Any = None) -> Any:
        found = given_runtime(route, state, runtime)
        listed = isinstance(found, list | tuple) and target in found
        return via if found == target or listed else found

    literal, pair = cast(Any, Literal), cast(Any, tuple)
    through = literal[via] if isinstance(via, str) else pair[tuple(literal[n] for n in names)]
    routed.__name__ = routed.__qualname__ = f"{route.__name__}_via_{'_'.join(names)}"
    routed.__annotations__ = {
        "state": state_type(route),
        "return": literal[kept] | through if kept else through,
    }
    return routed


def started_beside(route: Route, target: str) -> tuple[str, ...]:
    """The nodes ``route`` starts side by side with ``target``, ``target`` first; () if none."""
    together = beside(route)
    if target not in together:
        return ()
    return (target, *(name for name in together if name != target))


def placed_before(
    wiring: Wiring, target: str, node: NodeSpec, route: Route | None = None
) -> Wiring:
    """``wiring`` with ``node`` on every way into ``target``, going on to it (or ``route``).

    Each route that can go to ``target`` goes to ``node`` instead: a router by ``detour``, a
    named next node by its name. That is every edge into ``target`` changed, as putting a
    node before another changes them in plain LangGraph, so a run reaching ``target`` from
    research, a person's decision, a revision or a review round passes ``node`` first (run
    again only when its inputs changed: else its result is reused). A node that routes
    itself (``Command``) keeps its ways.
    """
    placed: list[tuple[NodeSpec, Route]] = []
    onward: Route = target
    for spec, way in wiring:
        if callable(way) and target in targets(way):
            onward = started_beside(way, target) or onward  # before the nodes beside it too
            way = detour(way, target, via=node.name)
        elif isinstance(way, str) and way == target:
            way = node.name
        elif isinstance(way, tuple) and target in way:
            way = tuple(node.name if name == target else name for name in way)
        placed.append((spec, way))
    return (*placed, (node, onward if route is None else route))
