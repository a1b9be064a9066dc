"""build_graph(): the Research → Writer → Reviewer StateGraph, uncompiled."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from contracts import TaskSpec
from graphs import nodes
from graphs.context import RunContext
from graphs.node_runner import ContextFactory, Fingerprint, contract_node
from graphs.routing import (
    route_after_decision,
    route_after_finalize,
    route_after_research,
    route_after_review,
    route_after_writer,
    route_by_handoff,
)
from graphs.state import WorkflowInput, WorkflowOutput, WorkflowState

NODE_INPUTS: dict[str, tuple[str, ...]] = {
    "research": ("task", "handoff", "research", "freshness"),
    "writer": ("task", "handoff", "research", "draft", "review", "freshness"),
    "reviewer": ("task", "handoff", "research", "draft", "freshness"),
    "finalize": ("task", "research", "draft", "review", "freshness"),
    "conclude": ("task", "research", "draft", "review"),
    "approve_research": ("task", "handoff", "research"),
    "review_decision": ("task", "handoff", "research", "draft", "review"),
    "stale_decision": ("task", "handoff", "freshness", "draft"),
}
"""The channels each node reads; their hash identifies the node's work."""
PAUSING_NODES = frozenset({"approve_research", "review_decision", "stale_decision"})
"""Nodes that call interrupt(): one interrupt each, nothing recorded before it."""


def _corpus_fingerprint(ctx: RunContext, task: TaskSpec) -> str:
    return ctx.research.fingerprint(task)


def build_graph(
    default_context: ContextFactory | None = None,
) -> StateGraph[WorkflowState, RunContext, WorkflowInput, WorkflowOutput]:
    """The workflow's builder; compile it with the checkpointer of your choice.

    Services arrive as ``Runtime[RunContext]`` (``invoke(..., context=...)``). Hosts that
    cannot pass Python objects as context, like the dev server, give ``default_context``.
    """
    builder = StateGraph(
        WorkflowState,
        input_schema=WorkflowInput,
        output_schema=WorkflowOutput,
        context_schema=RunContext,
    )
    bodies = {
        "research": nodes.research,
        "writer": nodes.writer,
        "reviewer": nodes.reviewer,
        "finalize": nodes.finalize,
        "conclude": nodes.conclude,
        "approve_research": nodes.approve_research,
        "review_decision": nodes.review_decision,
        "stale_decision": nodes.stale_decision,
    }
    fingerprints: dict[str, Fingerprint] = {"research": _corpus_fingerprint}
    for name, body in bodies.items():
        builder.add_node(
            name,
            contract_node(
                name,
                body,
                inputs=NODE_INPUTS[name],
                default_context=default_context,
                fingerprint=fingerprints.get(name),
                pauses=name in PAUSING_NODES,
            ),
        )
    builder.add_edge(START, "research")
    builder.add_conditional_edges(
        "research",
        route_after_research,
        ["writer", "approve_research", "research", "conclude", END],
    )
    builder.add_conditional_edges("approve_research", route_after_decision, ["writer", END])
    builder.add_conditional_edges("review_decision", route_after_decision, ["writer", END])
    resumptions = ["research", "writer", "reviewer", "finalize", "stale_decision", END]
    builder.add_conditional_edges("writer", route_after_writer, resumptions)
    builder.add_conditional_edges(
        "reviewer", route_after_review, [*resumptions, "review_decision", "conclude"]
    )
    builder.add_conditional_edges("finalize", route_after_finalize, resumptions)
    builder.add_conditional_edges("stale_decision", route_by_handoff, resumptions)
    builder.add_edge("conclude", END)
    return builder
