"""Research: read sources, extract sourced facts, hand them to the Writer."""

from __future__ import annotations

from dataclasses import replace
from typing import TypedDict

from contracts import FreshnessReport, Handoff, ResearchBundle, TaskSpec
from graphs.declare import node
from graphs.node_runner import NodeCall, NodeResult
from graphs.ports import ResearchAgent, ResearchRequest, ref_id


class ResearchInput(TypedDict):
    """What research reads: the task, its envelope, and an earlier pass to widen."""

    task: TaskSpec
    handoff: Handoff | None
    research: ResearchBundle | None
    freshness: FreshnessReport | None


class ResearchOutput(TypedDict, total=False):
    """The bundle; a research pass also clears any earlier freshness refusal."""

    research: ResearchBundle | None
    freshness: FreshnessReport | None


def corpus_fingerprint(agent: ResearchAgent, task: TaskSpec) -> str:
    """What research would read on disk: changed sources mean new work."""
    return agent.fingerprint(task)


@node(
    "research",
    reads=ResearchInput,
    writes=ResearchOutput,
    agent=ResearchAgent,
    stores_artifacts=True,
    fingerprint=corpus_fingerprint,
)
def research(call: NodeCall) -> NodeResult:
    """One research pass; widened once when the first found too little evidence."""
    earlier: ResearchBundle | None = call.read("research")
    widen = earlier is not None and earlier.result_status == "failed" and not earlier.widened
    step = replace(call.step, widen=widen) if widen else call.step
    request = call.request(ResearchRequest, task=call.task, store=call.ctx.store, step=step)
    output = call.agent.run(request)
    bundle: ResearchBundle = call.accept("research", output.result)
    written = [source.snapshot for source in bundle.sources] + list(bundle.artifact_refs)
    return NodeResult(
        update={"research": bundle, "freshness": None},
        usage=output.usage,
        artifact_ids=[ref_id(ref) for ref in written],
        receipts=output.receipts,
    )
