"""The wiring: which declared nodes the workflow has, and where each one routes.

Routers are pure functions of contract fields whose ``Literal`` return type is the list of
branch targets and whose state type (``RouteState``) is what they read; impossible input is
refused loudly. Each node's router is its conditional edge, and the node runner asks the
same router before returning, so the handoff a node records names the node that actually
runs next. Each node is added with LangGraph's ``input_schema``: its reads, its router's
and its envelope's (``input_schema`` below).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from contracts import (
    DecisionLog,
    DraftArticle,
    ErrorCode,
    FreshnessReport,
    Handoff,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
)
from graphs.boundary import read, require
from graphs.channels import Channel, ChannelError, channels_of, merge, state_schema
from graphs.context import RunContext
from graphs.declare import NodeSpec, sent
from graphs.entry import entry_router
from graphs.errors import WiringError
from graphs.fan_out import fanning, mapped, side_by_side, together
from graphs.node_runner import ContextFactory, Router, node_schema, run_node
from graphs.nodes import export_article as export
from graphs.nodes.approve_research import approve_research
from graphs.nodes.conclude import conclude
from graphs.nodes.finalize import finalize
from graphs.nodes.join_research import join_research
from graphs.nodes.research import research
from graphs.nodes.review_decision import review_decision
from graphs.nodes.reviewer import reviewer
from graphs.nodes.revise_task import revise_task
from graphs.nodes.stale_decision import STALE_INPUT, stale_decision
from graphs.nodes.writer import writer
from graphs.routing import STOP, RouteState, needs_approval, refused, route_stale, stopped
from graphs.stale import research_changed
from graphs.state import BranchInput, RunnerWrites, WorkflowInput
from graphs.wiring import Route, Wiring, check_wiring, contribute_reads, targets


class WorkflowOutput(TypedDict, total=False):
    """What a finished run returns to its caller (LangGraph's ``output_schema``).

    A channel a node writes for the caller, not for a later node, goes here.
    """

    outcome: RunOutcome | None
    research: ResearchBundle | None
    draft: DraftArticle | None
    review: ReviewResult | None


def route_after_research_branch(state: RouteState) -> Literal["join_research"]:
    """Every research branch hands its bundle to the join, a stopped one too.

    The join ends the run with that branch's own error.
    """
    return "join_research"


def route_after_research(
    state: RouteState,
) -> Literal["writer", "approve_research", "research", "conclude", "__end__"]:
    """After the join: facts → Writer; too little evidence → one widened retry; else end.

    A route to ``research`` fans out again, one branch per question.
    """
    if stopped(state):
        return STOP
    bundle = require(state, "research", ResearchBundle, node="route_after_research")
    if bundle.facts and bundle.result_status != "failed":
        task = require(state, "task", TaskSpec, node="route_after_research")
        return "approve_research" if needs_approval(task, bundle) else "writer"
    too_little = any(error.code == ErrorCode.INSUFFICIENT_EVIDENCE for error in bundle.errors)
    if too_little and not bundle.widened:
        return "research"
    return "conclude"


def route_after_approval(state: RouteState) -> Literal["writer", "__end__"]:
    """Approved or revised research goes to the writer; a rejection recorded the end.

    Each pause has a router of its own: a node inserted after this decision changes this
    route only, never the one after the review decision.
    """
    return STOP if stopped(state) else "writer"


WriterStale = Literal["research", "stale_decision"]
"""The writer checks research's output only."""


def route_after_writer(
    state: RouteState,
) -> WriterStale | Literal["reviewer", "conclude", "__end__"]:
    """A draft goes to review, unless the writer ended the run or refused its inputs.

    A writer that could write no draft at all (nothing fits the limits) ends the run:
    another round with the same limits and facts would not change that.
    """
    if stopped(state):
        return STOP
    report = refused(state, "writer")
    if report:
        return cast(WriterStale, route_stale(state, report, WriterStale))
    draft = require(state, "draft", DraftArticle, node="route_after_writer")
    return "conclude" if draft.result_status == "failed" else "reviewer"


ReviewerStale = Literal["research", "writer", "stale_decision"]
"""The reviewer adopts a person's newer draft itself; a missing one is written again."""


def route_after_review(
    state: RouteState,
) -> ReviewerStale | Literal["finalize", "review_decision", "conclude", "__end__"]:
    """Approved → finalize; changes with rounds left → writer; otherwise a person or end."""
    if stopped(state):
        return STOP
    report = refused(state, "reviewer")
    if report:
        return cast(ReviewerStale, route_stale(state, report, ReviewerStale))
    task = require(state, "task", TaskSpec, node="route_after_review")
    draft = require(state, "draft", DraftArticle, node="route_after_review")
    review = require(state, "review", ReviewResult, node="route_after_review")
    if review.draft_revision != draft.revision:
        raise ValueError(
            f"review is for draft revision {review.draft_revision}, "
            f"but the current draft is revision {draft.revision}"
        )
    if review.verdict == "approved":
        return "finalize"
    log = read(state, "decisions", DecisionLog, node="route_after_review")
    granted = log.granted_review_rounds() if log else 0
    rounds = task.budget.max_review_rounds + granted
    if review.verdict == "changes_requested" and draft.revision < rounds:
        return "writer"
    return "review_decision" if task.policies.on_review_exhausted == "ask" else "conclude"


def route_after_review_decision(state: RouteState) -> Literal["writer", "__end__"]:
    """A granted round goes back to the writer; accepting as partial or aborting ended it."""
    return STOP if stopped(state) else "writer"


FinalizeStale = Literal["reviewer", "writer", "stale_decision"]
"""Finalize checks the draft only: a newer one is reviewed, a missing one written again."""


def route_after_finalize(
    state: RouteState,
) -> FinalizeStale | Literal["confirm_export", "__end__"]:
    """Finalize ends the run, or asks to export first; a changed input is reviewed again."""
    report = refused(state, "finalize")
    if report is None and export.wants_export(
        require(state, "task", TaskSpec, node="route_after_finalize"),
        read(state, "outcome", RunOutcome, node="route_after_finalize"),
    ):
        return "confirm_export"
    if stopped(state) or report is None:
        return STOP
    return cast(FinalizeStale, route_stale(state, report, FinalizeStale))


def route_after_stale_decision(
    state: RouteState,
) -> Literal["research", "writer", "reviewer", "__end__"]:
    """Accepted revisions → the node that refused them; re-run → their producer; else end.

    A draft revision accepted before finalize goes to the reviewer, not to finalize:
    finalize publishes only what was reviewed, so an accepted edit is reviewed first.
    """
    if stopped(state):
        return STOP
    report = require(state, "freshness", FreshnessReport, node="route_after_stale_decision")
    log = require(state, "decisions", DecisionLog, node="route_after_stale_decision")
    last = log.last()
    if last is not None and STALE_INPUT.chosen(last) == "accept_new_revision":
        if report.node == "finalize":
            return "reviewer"
        if report.node not in ("writer", "reviewer"):
            raise ValueError(f"no node consumes inputs refused by {report.node!r}")
        return report.node  # type: ignore[return-value]
    return "research" if research_changed(report) else "writer"


def then(target: str | tuple[str, ...], *, branch: bool = False) -> Router:
    """The router of a node with one way on: ``target``, unless the run must stop.

    A wiring entry may name its next node instead of a router, ``(node, "reviewer")``, or
    the branch nodes it starts side by side, ``(node, ("check_quotes", "measure_draft"))``;
    the build makes this router for it, its ``Literal`` naming the targets and the end. A
    branch node's tasks always go on to their join (a branch that stopped says so in its
    result, and the join ends the run with it), so its router names the join alone.
    """
    names = (target,) if isinstance(target, str) else target

    def route(state: RouteState) -> str | tuple[str, ...]:
        return target if branch or not stopped(state) else STOP

    route.__name__ = route.__qualname__ = f"then_{'_'.join(names)}"
    returns = cast(Any, Literal)[names] if branch else cast(Any, Literal)[(*names, STOP)]
    route.__annotations__ = {"state": RouteState, "return": returns}
    return route


class HandedState(RouteState, total=False):
    """What the router of a node that routes itself reads: the envelope it handed over."""

    handoff: Handoff | None


def goes_as_commanded(spec: NodeSpec) -> Router:
    """The router of a node whose body returns ``Command(goto=...)``: where it went.

    The runner hands over the envelope for the node the Command named, so this edge
    follows the envelope's next node, unless the run must stop; its ``Literal`` is the
    body's return type's, and the end.
    """

    def route(state: HandedState) -> str | tuple[str, ...]:
        if stopped(state):
            return STOP
        handed = require(state, "handoff", Handoff, node=spec.name)
        if handed.from_node != spec.name:
            raise WiringError(
                f"node {spec.name!r} is wired to route itself but returned no Command: "
                f"return Command(goto=..., update=...) to one of {list(spec.goes_to)}"
            )
        return tuple(handed.next_nodes) if handed.next_nodes else handed.next_allowed_action

    route.__name__ = route.__qualname__ = f"goto_of_{spec.name}"
    route.__annotations__ = {
        "state": HandedState,
        "return": cast(Any, Literal)[(*spec.goes_to, STOP)],
    }
    return route


def router_of(spec: NodeSpec, route: Route) -> Router:
    """A wiring entry's router: its own, one made for a named next node, or the Command's."""
    if spec.goes_to and route is not None:
        raise WiringError(
            f"node {spec.name!r} routes itself (its body returns Command[Literal[...]]) and "
            f"is wired with a route too: wire it as ({spec.name}, None)"
        )
    if route is None:
        if not spec.goes_to:
            raise WiringError(
                f"node {spec.name!r} is wired with no route: give it a router, the node it "
                "goes to, or annotate its body -> Command[Literal[...]] and return a Command"
            )
        return goes_as_commanded(spec)
    return route if callable(route) else then(route, branch=spec.branch is not None)


def routed(wiring: Wiring) -> list[tuple[NodeSpec, Router]]:
    """The wiring as LangGraph builds it: ``read_by`` applied, named next nodes a router.

    Each route starts every branch node of a join it starts one of (``fan_out.together``);
    a router several nodes share stays one router.
    """
    strays = [type(spec).__name__ for spec, _ in wiring if not isinstance(spec, NodeSpec)]
    if strays:
        raise WiringError(
            f"the wiring's entries are (node, route) with a node declared by @node(...), not "
            f"{', '.join(strays)}; a compiled graph runs as a node's body: "
            "node('polish', reads=..., writes=...)(polish_graph)"
        )
    siblings = side_by_side(spec for spec, _ in wiring)
    made: dict[Router, Router] = {}
    found: list[tuple[NodeSpec, Router]] = []
    for spec, route in mapped(contribute_reads(wiring)):
        router = router_of(spec, route)
        if router not in made:
            made[router] = together(router, siblings)
        found.append((spec, made[router]))
    return found


def route_after_conclude(state: RouteState) -> Literal["__end__"]:
    """Conclude records the end."""
    return STOP


def route_after_revision(
    state: RouteState,
) -> Literal["research", "writer", "approve_research", "conclude", "__end__"]:
    """Research again, or on as after the join when research holds; refused: the end."""
    if state.get("revision") is not None:
        return STOP
    return "research" if state.get("research") is None else route_after_research(state)


WIRING: Wiring = (
    (research, route_after_research_branch),
    (join_research, route_after_research),
    (approve_research, route_after_approval),
    (writer, route_after_writer),
    (reviewer, route_after_review),
    (review_decision, route_after_review_decision),
    (stale_decision, route_after_stale_decision),
    (finalize, route_after_finalize),
    (export.confirm_export, export.route_after_confirm_export),
    (export.export_article, export.route_after_export),
    (conclude, route_after_conclude),
    (revise_task, route_after_revision),
)
"""Every node of the workflow with its router; the first one is where a run starts."""


def workflow_channels(wiring: Wiring = WIRING) -> dict[str, Channel]:
    """Every state channel with its contract, from the declarations; mismatches fail here."""
    declared = [
        ("the workflow input", WorkflowInput),
        ("the node runner", RunnerWrites),
        ("a fan-out", BranchInput),
    ]
    for spec, _ in wiring:
        declared.append((f"{spec.name} writes", spec.writes))
    for spec, _ in mapped(wiring):  # a Send's payload carries what its node reads
        if spec.branch is sent:
            declared.append((f"the Sends to {spec.name}", spec.reads))
    channels = merge(declared)
    for spec, _ in wiring:
        merge([*declared, (f"{spec.name} reads", spec.reads)])
        unknown = sorted(set(spec.inputs) - set(channels))
        if unknown:
            raise ChannelError(f"node {spec.name!r} reads {unknown}, which no node writes")
    return channels


def input_schema(spec: NodeSpec, route: Router, channels: Mapping[str, Channel]) -> type | None:
    """The TypedDict LangGraph hands ``spec``'s node: what it, its router and envelope read.

    None, the whole state, when its router reads the whole state. A channel this graph
    does not have is left out: it reads as absent, as in the whole state.
    """
    schema = node_schema(spec, route)
    if schema is None:
        return None
    fields = {name: channels[name].annotation | None for name in sorted(schema) if name in channels}
    schema_type: type = TypedDict(f"{spec.name}_input", fields, total=False)  # type: ignore[misc]
    return schema_type


def build_graph(
    default_context: ContextFactory | None = None,
    wiring: Wiring = WIRING,
) -> StateGraph[Any, RunContext, WorkflowInput, WorkflowOutput]:
    """The workflow's builder; compile it with the checkpointer of your choice.

    Services arrive as ``Runtime[RunContext]`` (``invoke(..., context=...)``). Hosts that
    cannot pass Python objects as context, like the dev server, give ``default_context``.
    ``wiring`` is the list of (node, router) pairs: pass an extended one to add a node; a
    node with one way on may name that node instead of a router (see ``then``).
    What LangGraph would build but never run right (a node nothing reaches, a route to no
    node, a router two pauses share, an agent request field from an undeclared channel) is
    refused here, before any node runs: see ``graphs.wiring``.
    """
    built = routed(wiring)
    channels = workflow_channels(wiring)
    start = entry_router(built)
    ends = check_wiring(built, start, returned=channels_of(WorkflowOutput))
    builder: StateGraph[Any, RunContext, WorkflowInput, WorkflowOutput] = StateGraph(
        state_schema("WorkflowState", channels, [s.starts_on for s, _ in built if s.starts_on]),
        input_schema=WorkflowInput,
        output_schema=WorkflowOutput,
        context_schema=RunContext,
    )
    branches = {spec.name: spec for spec, _ in built if spec.branch is not None}
    nodes = {spec.name: spec for spec, _ in built}
    for spec, route in built:
        # A join waits until no other task is left (defer): all its branches finished.
        runner = run_node(spec, route, default_context, nodes)
        schema = input_schema(spec, route, channels)
        builder.add_node(spec.name, runner, defer=bool(spec.joins), input_schema=schema)
        edge = fanning(route, branches, default_context)
        builder.add_conditional_edges(spec.name, edge, list(ends[spec.name]))
    start_edge = fanning(start, branches, default_context)
    builder.add_conditional_edges(START, start_edge, list(targets(start)))
    return builder
