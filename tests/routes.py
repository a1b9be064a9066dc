"""The route check every workflow test ends with: each handoff names the node that ran next.

The envelope a node records is derived from state and the route the graph took. After each
test, every checkpoint of every thread the test made is walked: the handoff in it must name
exactly the node the checkpoint says runs next (``__end__`` when nothing does), and state
that node's limits as its declaration has them (``allowed_tools``, ``done_when``; none for
``__end__``). The edges seen are collected, so the session can report which of the graph's
edges the suite walked; run with ``--routes-walked`` (``make check``, ``make test``), a
route between two nodes that no test walked fails the session (``unwalked``): a value
left in a router's ``Literal`` that no path of it returns any more draws an edge, and its
target looks reachable, so only a run can tell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END

from app.workflow import Workflow
from contracts import BranchResults, Handoff
from graphs import WIRING, NodeSpec, Wiring
from graphs.diagram import drawn_graph
from graphs.graph import routed

WALKED: set[tuple[str, str]] = set()
"""(from_node, next node) pairs seen in handoffs during this session."""


def graph_edges(wiring: Wiring = WIRING) -> set[tuple[str, str]]:
    """Every edge of the compiled graph between nodes (START excluded)."""
    drawn = drawn_graph(wiring)
    return {(edge.source, edge.target) for edge in drawn.edges if edge.source != "__start__"}


def unwalked(walked: set[tuple[str, str]], wiring: Wiring = WIRING) -> list[str]:
    """One line per route between nodes no walk took: the router that names it, and the fix.

    A route to the end is left out: a router names ``__end__`` for the stop the runner may
    take at any node (a spent budget, a refusal), which the template's tests prove once.
    """
    routers = {spec.name: route.__name__ for spec, route in routed(wiring)}
    return [
        f"{source} -> {target}: {routers[source]} names {target!r} in its Literal, but no test "
        f"walked that route; if no path of {routers[source]} returns {target!r} any more, take "
        f"it out of the Literal; if one does, add a test that takes it"
        for source, target in sorted(graph_edges(wiring) - walked)
        if target != END
    ]


def check_limits(handoff: Handoff, following: list[NodeSpec]) -> None:
    """The handoff states what the nodes that run next declare, in their order."""
    tools = [tool.name for spec in following for tool in spec.tools]
    texts = [text for spec in following for text in spec.done_when]
    assert handoff.allowed_tools == list(dict.fromkeys(tools)), (handoff.from_node, following)
    assert handoff.done_when == list(dict.fromkeys(texts)), (handoff.from_node, following)


def ended_without_handoff(history: list[Any]) -> set[tuple[str, str]]:
    """Runs that ended after one node that handed nothing over (a refusal): its edge to the end.

    ``history`` is newest first: a step that ran one node and left nothing to run next is
    that node's route to ``__end__``, whatever envelope the state still holds.
    """
    edges: set[tuple[str, str]] = set()
    for newer, older in zip(history, history[1:], strict=False):
        routed = newer.metadata is not None and newer.metadata.get("source") == "loop"
        if routed and not newer.next and len(older.next) == 1:
            edges.add((older.next[0], "__end__"))
    return edges


def check_handoffs_follow_the_route(workflow: Workflow) -> set[tuple[str, str]]:
    """Assert the invariant on every checkpoint of every thread; returns the edges walked."""
    edges: set[tuple[str, str]] = set()
    nodes = {spec.name: spec for spec, _ in routed(workflow.wiring)}  # joins a list implies
    joins = {spec.name: spec for spec in nodes.values() if spec.joins}
    for thread_id in workflow.threads():
        config = workflow.config(thread_id)
        history = list(workflow.graph.get_state_history(config))
        edges.update(ended_without_handoff(history))
        for snapshot in history:
            if snapshot.metadata is None or snapshot.metadata.get("source") != "loop":
                continue  # a state a person or test wrote directly (update_state), not a route
            ran_next = snapshot.next[0] if snapshot.next else "__end__"
            starts_on = nodes[ran_next].starts_on if ran_next in nodes else None
            if starts_on is not None and snapshot.values.get(starts_on) is not None:
                edges.add(("__start__", ran_next))  # a new run's input, not a handoff
                continue
            if ran_next in joins:  # branches hand over in their results, each to the join
                results = BranchResults.model_validate(snapshot.values["branches"])
                for branch in joins[ran_next].joins:
                    for result in results.of(branch.name).values():
                        assert result.handoff.next_allowed_action == ran_next
                        check_limits(result.handoff, [nodes[ran_next]])
                        edges.add((result.node, ran_next))
                continue
            raw: Any = snapshot.values.get("handoff")
            if raw is None:
                continue
            handoff = Handoff.model_validate(raw)
            if handoff.next_nodes:  # branch nodes of several kinds, started side by side
                assert set(snapshot.next) == set(handoff.next_nodes), (handoff, snapshot.next)
                check_limits(handoff, [nodes[name] for name in handoff.next_nodes])
                edges.update((handoff.from_node, started) for started in handoff.next_nodes)
                continue
            assert handoff.next_allowed_action == ran_next, (
                f"thread {thread_id} step {snapshot.metadata.get('step')}: {handoff.from_node} "
                f"handed over to {handoff.next_allowed_action!r} but {ran_next!r} ran next"
            )
            check_limits(handoff, [] if ran_next == "__end__" else [nodes[ran_next]])
            edges.add((handoff.from_node, ran_next))
    WALKED.update(edges)
    return edges


def handed_on_by(workflow: Workflow, thread: str, node: str) -> Handoff:
    """The envelope ``node`` last handed on, from the thread's checkpoint history."""
    return last_handoff(workflow, thread, lambda handoff: handoff.from_node == node, node)


def handed_to(workflow: Workflow, thread: str, node: str) -> Handoff:
    """The envelope last handed to ``node``, whichever node ran before it."""
    return last_handoff(workflow, thread, lambda handoff: handoff.next_allowed_action == node, node)


def last_handoff(
    workflow: Workflow, thread: str, wanted: Callable[[Handoff], bool], node: str
) -> Handoff:
    """The last envelope of the thread's checkpoint history that ``wanted`` accepts."""
    for snapshot in workflow.graph.get_state_history(workflow.config(thread)):
        handed = snapshot.values.get("handoff")
        handoff = None if handed is None else Handoff.model_validate(handed)
        if handoff is not None and wanted(handoff):
            return handoff
    raise AssertionError(f"no envelope from or to {node} in thread {thread!r}")
