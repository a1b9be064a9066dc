"""Running the cases: each in its own thread on a scratch SQLite file, through the public API.

A run that pauses for a person on open questions is recorded as paused and then approved,
so the article it would publish is measured too.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.evaluation.cases import BUNDLED_CORPORA, Case
from app.evaluation.measures import CaseResult, check_answerability, check_article, check_gold
from app.settings import Settings
from contracts import DraftArticle, ResearchBundle, RunOutcome, TaskState


def evaluate(
    cases: list[tuple[Case, Path]],
    settings: Settings,
    *,
    progress: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run every case on a scratch database and measure what it produced.

    The scratch database keeps its artifacts in its own folder: a store the settings name
    for the user's database (``database`` on PostgreSQL, ``memory`` beside ``memory://``)
    could not serve an SQLite file.

    Raises SourceRefused (nothing run) for a case whose corpus is outside the roots.
    """
    from app.workflow import Workflow  # the harness drives the public API

    results: list[CaseResult] = []
    admit(cases, settings)
    with tempfile.TemporaryDirectory(prefix="handoff-eval-") as scratch:
        scratch_settings = settings.with_overrides(
            data_dir=Path(scratch),
            database_url=f"sqlite:///{scratch}/eval.db",
            artifact_store="auto",
            artifact_dir=None,
            corpus_roots=[*settings.corpus_roots, BUNDLED_CORPORA],
        )
        with Workflow(scratch_settings) as workflow:
            for case, corpus in cases:
                result = _run_case(workflow, case, corpus)
                results.append(result)
                if progress is not None:
                    progress(result)
    return results


def admit(cases: list[tuple[Case, Path]], settings: Settings) -> None:
    """Refuse, before any case runs, a case whose corpus lies outside the corpus roots.

    A cases file names folders as a task does, so the same roots apply: those of the
    settings, and the evaluation set's own corpora (``BUNDLED_CORPORA``). The hint names
    the ``HANDOFF_CORPUS_ROOTS`` value that admits the folder, from the settings' roots.
    """
    policy = settings.corpus_policy()
    policy = replace(policy, roots=(*policy.roots, BUNDLED_CORPORA.resolve()))
    for case, corpus in cases:
        policy.admit(corpus, f"case {case.id!r} corpus")


def _run_case(workflow: Any, case: Case, corpus: Path) -> CaseResult:
    result = CaseResult(case)
    constraints: dict[str, Any] = {"required_sections": case.required_sections}
    if case.max_words is not None:
        constraints["max_words"] = case.max_words
    task = workflow.task(
        case.objective, questions=case.questions, constraints=constraints, corpus=[str(corpus)]
    )
    outcome: RunOutcome = workflow.run(task, thread_id=case.id)
    result.status = _ending(outcome)
    if outcome.state == TaskState.INPUT_REQUIRED:
        request = workflow.pending(case.id)
        if request is None:
            result.defects.append("paused without a request for a person")
            return result
        outcome = workflow.resume(
            case.id, {"interrupt_id": request.interrupt_id, "action": "approve"}
        )
    result.final = _ending(outcome)
    state = workflow.state(case.id)
    bundle = state.get("research")
    draft = state.get("draft")
    store = workflow.context.store
    check_answerability(result, case, bundle)
    body: str | None = None
    if outcome.article is not None:
        body = store.get(outcome.article).decode("utf-8")
    elif isinstance(draft, DraftArticle):
        body = store.get(draft.body).decode("utf-8")
    if body is not None and isinstance(bundle, ResearchBundle):
        check_article(result, case, bundle, body, store)
    elif case.expect == "completed":
        result.defects.append("no article was written")
    check_gold(result, case, corpus, bundle if isinstance(bundle, ResearchBundle) else None)
    return result


def _ending(outcome: RunOutcome) -> str:
    """How a run ended: paused for a person, or its result status."""
    if outcome.state == TaskState.INPUT_REQUIRED:
        return "paused"
    return outcome.result_status or outcome.state.value
