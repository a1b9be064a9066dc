"""Research: one branch per research question, run in parallel, each reading the sources.

A route to ``research`` fans out one task per question of the task (``q-1`` is the
objective, then each sub-question). Each task researches its question only and hands its
own bundle to ``join_research``, which merges them into the one bundle the Writer reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from typing_extensions import TypedDict

from contracts import FreshnessReport, ResearchBundle, TaskSpec, research_questions
from graphs.agents import ResearchAgent, ResearchRequest
from graphs.boundary import require
from graphs.declare import node
from graphs.node_runner import NodeCall, NodeResult
from graphs.ports import ref_id
from graphs.tools import READ_SOURCE, SEARCH_CORPUS


class ResearchInput(TypedDict):
    """What research reads: the task, and an earlier pass to widen.

    No envelope: its work depends on its view of the task and the corpus only.
    """

    task: TaskSpec
    research: ResearchBundle | None
    freshness: FreshnessReport | None


class ResearchOutput(TypedDict, total=False):
    """A branch's bundle: the facts, sources and open question of its one question."""

    research: ResearchBundle | None


def corpus_fingerprint(agent: ResearchAgent, task: TaskSpec) -> str:
    """What research would read on disk: changed sources mean new work."""
    return agent.fingerprint(task)


def question_keys(state: Mapping[str, Any]) -> list[str]:
    """One research branch per question of the task: the objective, then each sub-question."""
    task = require(state, "task", TaskSpec, node="research")
    return [question.id for question in research_questions(task)]


def question_view(task: TaskSpec, key: str | None) -> dict[str, Any]:
    """What one branch's research depends on: its question, the objective, the corpus.

    The objective's branch (q-1) also ranks the required sections, whose topic it is.
    Nothing else of the task: a revision that adds a sub-question or tightens the word
    limit leaves every other branch's result valid, and it is reused.
    """
    questions = {question.id: question.text for question in research_questions(task)}
    first = next(iter(questions))
    return {
        "task_id": task.task_id,
        "objective": task.objective,
        "questions": list(questions.values()) if key is None else [questions.get(key)],
        "corpus": task.corpus,
        "sections": task.constraints.required_sections if key in (None, first) else [],
    }


WIDENED = "widened retry: the first pass of every question together found too little evidence"
"""Why research runs a second time, as the audit notes it (``NodeRun.note``)."""


@node(
    "research",
    reads=ResearchInput,
    writes=ResearchOutput,
    agent=ResearchAgent,
    stores_artifacts=True,
    fingerprint=corpus_fingerprint,
    task_view=question_view,
    branch=question_keys,
    tools=(READ_SOURCE, SEARCH_CORPUS),
    done_when=(
        "Every fact quotes its source verbatim, with the span it was found at.",
        "Each question no sentence of the corpus addresses is left open, not guessed.",
    ),
)
def research(call: NodeCall) -> NodeResult:
    """Research one question; widened once when the joined first pass found too little."""
    earlier: ResearchBundle | None = call.read("research")
    widen = earlier is not None and earlier.result_status == "failed" and not earlier.widened
    step = replace(call.step, widen=widen) if widen else call.step
    bundle: ResearchBundle
    bundle = call.delegate(
        ResearchRequest,
        "research",
        task=call.task,
        step=step,
        question_id=call.step.branch,
        tools=call.tools,
    )
    written = [source.snapshot for source in bundle.sources] + list(bundle.artifact_refs)
    return NodeResult(
        {"research": bundle},
        artifact_ids=[ref_id(ref) for ref in written],
        note=WIDENED if widen else None,
    )
