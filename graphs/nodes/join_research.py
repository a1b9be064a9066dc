"""Join research: the branches' bundles merged into the one bundle the Writer reads.

It runs once every research branch finished (a branch that had to stop ends the run with
its own error before this runs). Merging is deterministic: sources once per id, facts once
per id (a fact two questions found names both), open questions, errors and notes in the
order of the questions.
"""

from __future__ import annotations

from collections.abc import Iterable

from typing_extensions import TypedDict

from contracts import (
    ArtifactRef,
    ErrorCode,
    ErrorDetail,
    Fact,
    FreshnessReport,
    Question,
    ResearchBundle,
    ResultStatus,
    Source,
    TaskSpec,
)
from graphs.declare import node
from graphs.node_runner import NodeCall, NodeResult
from graphs.nodes.research import research
from graphs.ports import ArtifactStore, StepInfo, ref_id


class JoinResearchInput(TypedDict):
    """The task; the branches' bundles arrive through the join itself."""

    task: TaskSpec


class JoinResearchOutput(TypedDict, total=False):
    """The merged bundle; a research pass also clears any earlier freshness refusal."""

    research: ResearchBundle | None
    freshness: FreshnessReport | None


@node(
    "join_research",
    reads=JoinResearchInput,
    writes=JoinResearchOutput,
    stores_artifacts=True,
    joins=(research,),
)
def join_research(call: NodeCall) -> NodeResult:
    """Merge the research branches, in question order, into one bundle."""
    bundles = [bundle for _, bundle in call.branch_outputs(research, "research")]
    bundle = merge_bundles(call.task, bundles, call.ctx.store, call.step)
    return NodeResult(
        update={"research": bundle, "freshness": None},
        artifact_ids=[ref_id(ref) for ref in bundle.artifact_refs],
    )


def merge_bundles(
    task: TaskSpec, bundles: list[ResearchBundle], store: ArtifactStore, step: StepInfo
) -> ResearchBundle:
    """One bundle from the branches' bundles, the same for the same bundles.

    A source two branches read with different bytes (edited between their reads) is kept
    as the first read it, with a STALE_INPUT error: research must run again to agree.
    Too little evidence is a fault of the whole: a question without facts stays open, and
    INSUFFICIENT_EVIDENCE is kept only when no branch found any fact.
    """
    sources: dict[str, Source] = {}
    errors: list[ErrorDetail] = []
    for bundle in bundles:
        for source in bundle.sources:
            first = sources.setdefault(source.id, source)
            if first.sha256 != source.sha256:
                errors.append(
                    ErrorDetail(
                        code=ErrorCode.STALE_INPUT,
                        source_id=source.id,
                        detail=f"{source.id} changed while research read it: sha256 "
                        f"{first.sha256[:12]} then {source.sha256[:12]}",
                    )
                )
    facts = merge_facts(bundles)
    for bundle in bundles:
        for error in bundle.errors:
            insufficient = error.code == ErrorCode.INSUFFICIENT_EVIDENCE and facts
            if not insufficient and error not in errors:
                errors.append(error)
    questions: dict[str, Question] = {}
    for bundle in bundles:
        for question in bundle.open_questions:
            questions.setdefault(question.id, question)
    refs = [merged_notes(bundles, store, step)] if bundles else []
    refs += unique(ref for bundle in bundles for ref in bundle.artifact_refs if ref.kind != "notes")
    status: ResultStatus = "failed"
    if facts:
        complete = not errors and not questions
        complete = complete and all(bundle.result_status == "completed" for bundle in bundles)
        status = "completed" if complete else "partial"
    return ResearchBundle(
        task_id=task.task_id,
        result_status=status,
        facts=facts,
        sources=list(sources.values()),
        open_questions=list(questions.values()),
        artifact_refs=refs,
        errors=errors,
        retryable=any(bundle.retryable for bundle in bundles),
        widened=bool(bundles) and all(bundle.widened for bundle in bundles),
        missing_inputs=list(dict.fromkeys(item for b in bundles for item in b.missing_inputs)),
    )


def merge_facts(bundles: list[ResearchBundle]) -> list[Fact]:
    """Each fact once, in the order the branches found them (one branch: its facts as they are).

    A fact several branches found is the first one's, also answering the questions and
    naming the corroborating sources the later ones found it for.
    """
    facts: dict[str, Fact] = {}
    for bundle in bundles:
        for fact in bundle.facts:
            first = facts.get(fact.id)
            if first is None:
                facts[fact.id] = fact
                continue
            answers = [q for q in fact.answers if q not in first.answers]
            sources = [
                s for s in fact.corroborating_source_ids if s not in first.corroborating_source_ids
            ]
            if answers or sources:
                facts[fact.id] = first.model_copy(
                    update={
                        "also_answers": [*first.also_answers, *answers][:20],
                        "corroborating_source_ids": [*first.corroborating_source_ids, *sources],
                    }
                )
    return list(facts.values())


def merged_notes(
    bundles: list[ResearchBundle], store: ArtifactStore, step: StepInfo
) -> ArtifactRef:
    """The branches' notes, in question order, as the thread's one notes artifact.

    Each branch wrote its own (``<thread>-notes-<key>``); the bundle the Writer reads names
    one notes artifact of the thread's, as a bundle always has.
    """
    parts = [
        store.get(ref).decode()
        for bundle in bundles
        for ref in bundle.artifact_refs
        if ref.kind == "notes"
    ]
    text = "\n".join(parts)  # one branch: its notes byte for byte
    return store.put(step.artifact_id("notes"), "notes", text.encode(), "text/markdown")


def unique(refs: Iterable[ArtifactRef]) -> list[ArtifactRef]:
    """Artifact refs once each, in order."""
    found: dict[tuple[str, int], ArtifactRef] = {}
    for ref in refs:
        found.setdefault((ref.artifact_id, ref.revision), ref)
    return list(found.values())
