"""Writer: draft (or redraft) from facts only, addressing the last review."""

from __future__ import annotations

from contracts import (
    DecisionLog,
    DraftArticle,
    Handoff,
    ResearchBundle,
    ReviewResult,
)
from graphs.agents import WriterAgent, WriteRequest
from graphs.constraints import task_in_force
from graphs.declare import node
from graphs.freshness import summary
from graphs.node_runner import NodeCall, NodeResult
from graphs.nodes.draft_reads import DraftReads, DraftWrites
from graphs.ports import ref_id
from graphs.stale import guard


class WriterInput(DraftReads):
    """The facts, the envelope, and the last round's draft and review."""

    review: ReviewResult | None
    decisions: DecisionLog | None


class WriterOutput(DraftWrites, total=False):
    """A new draft, or the report of inputs it refused (and the end, if they are unusable)."""


@node(
    "writer",
    reads=WriterInput,
    writes=WriterOutput,
    agent=WriterAgent,
    stores_artifacts=True,
    done_when=(  # what the Reviewer checks
        "Every sentence cites claims of the research bundle that support it.",
        "Every quoted claim is verbatim in its source snapshot; every cited source is listed.",
        "The task's constraints hold; each required section is present, on topic, not empty.",
        "Each research question is addressed.",
    ),
)
def writer(call: NodeCall) -> NodeResult:
    """One writing round, after checking the research it was handed is still current."""
    handoff: Handoff = call.require("handoff")
    bundle: ResearchBundle = call.require("research")
    report, stop = guard(call, bundle=bundle, handoff=handoff, draft=None)
    if stop is not None:
        return stop
    draft: DraftArticle
    draft = call.delegate(WriteRequest, "draft", task=task_in_force(call.task, handoff))
    return NodeResult(
        {"draft": draft, "freshness": report},
        artifact_ids=[ref_id(draft.body)],
        checked_inputs=summary(report),
    )
