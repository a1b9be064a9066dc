"""The results as ``handoff eval`` prints them: a markdown table, or JSON with ``--json``."""

from __future__ import annotations

from typing import Any

from app.evaluation.gold import Answers, by_corpus
from app.evaluation.measures import CaseResult

MIN_RECALL = 0.8
"""Answer recall an article must reach, overall and on every corpus."""


def as_json(result: CaseResult) -> dict[str, Any]:
    """One case's measures, for ``handoff eval --json``."""
    return {
        "case": result.case.id,
        "first_run": result.status,
        "final": result.final,
        "open_questions": result.open_questions,
        "cited_claims": result.cited,
        "verbatim": result.verbatim,
        "sentences": result.sentences,
        "cited_sentences": result.cited_sentences,
        "coverage": round(result.coverage, 4),
        "sections_ok": result.sections_ok,
        "words": result.words,
        "defects": result.defects,
        "answers": _answers_json(result.answers),
        "baseline": _answers_json(result.baseline),
    }


def _answers_json(answers: Answers | None) -> dict[str, Any] | None:
    if answers is None:
        return None
    return {
        "recall": round(answers.recall, 4),
        "precision": round(answers.precision, 4),
        "answered": answers.answered,
        "missed": answers.missed,
        "relevant_cited": answers.relevant,
        "cited": answers.cited,
    }


COLUMNS = (
    "case",
    "first run",
    "final",
    "open questions",
    "verbatim",
    "coverage",
    "sections",
    "words",
    "recall",
    "precision",
    "baseline",
    "defects",
)
GOLD_COLUMNS = (
    "corpus",
    "questions",
    "recall",
    "precision",
    "baseline recall",
    "baseline precision",
    "verdict",
)


def table(results: list[CaseResult]) -> str:
    """The results as a markdown table, then each defect on its own line."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for result in results:
        case = result.case
        sections = (
            f"{result.sections_ok}/{len(case.required_sections) - len(case.uncovered_sections)}"
            if case.required_sections
            else "-"
        )
        limit = f"/{case.max_words}" if case.max_words is not None else ""
        cells = [
            case.id,
            result.status,
            result.final,
            str(len(result.open_questions)),
            f"{result.verbatim}/{result.cited}",
            f"{result.coverage:.2f}",
            sections,
            f"{result.words}{limit}",
            *_cells(result.answers),
            _baseline_cell(result.baseline),
            str(len(result.defects)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    total = sum(len(result.defects) for result in results)
    lines += ["", f"{len(results)} cases, {total} defects"]
    for result in results:
        lines += [f"- {result.case.id}: {defect}" for defect in result.defects]
    verdicts = answer_verdicts(results)
    if verdicts:
        lines += ["", "| " + " | ".join(GOLD_COLUMNS) + " |", "|" + "---|" * len(GOLD_COLUMNS)]
        lines += ["| " + " | ".join(row) + " |" for row in verdicts]
        missed = sum(row[-1] != "PASS" for row in verdicts)
        lines += ["", f"answers against gold: {missed} of {len(verdicts)} rows miss"]
        for result in results:
            missing = result.answers.missed if result.answers else []
            lines += [f"- {result.case.id}: gold answer not cited: {text!r}" for text in missing]
    return "\n".join(lines)


def _cells(answers: Answers | None) -> list[str]:
    if answers is None:
        return ["-", "-"]
    return [f"{len(answers.answered)}/{answers.answerable}", f"{answers.relevant}/{answers.cited}"]


def _baseline_cell(answers: Answers | None) -> str:
    return "-" if answers is None else " ".join(_cells(answers))


def failed(results: list[CaseResult]) -> bool:
    """Whether ``handoff eval`` fails: a case's defect, or a corpus below a threshold."""
    return any(result.defects for result in results) or any(
        row[-1] != "PASS" for row in answer_verdicts(results)
    )


def answer_verdicts(results: list[CaseResult]) -> list[list[str]]:
    """Per corpus, then overall: recall and precision beside the baseline's, and the verdict.

    PASS when recall is at least ``MIN_RECALL`` and the baseline's, and precision is above
    the baseline's; a corpus without gold answers has no row.
    """
    articles = by_corpus((r.case.corpus, r.answers) for r in results if r.answers)
    baselines = by_corpus((r.case.corpus, r.baseline) for r in results if r.baseline)
    rows = []
    for corpus in [*(key for key in articles if key), ""]:
        if corpus not in articles:
            continue
        article, baseline = articles[corpus], baselines[corpus]
        misses = [
            f"recall < {MIN_RECALL}" if article.recall < MIN_RECALL else "",
            "recall < baseline" if article.recall < baseline.recall else "",
            "precision <= baseline" if article.precision <= baseline.precision else "",
        ]
        rows.append(
            [
                corpus or "all",
                str(article.answerable),
                f"{article.recall:.2f}",
                f"{article.precision:.2f}",
                f"{baseline.recall:.2f}",
                f"{baseline.precision:.2f}",
                "; ".join(miss for miss in misses if miss) or "PASS",
            ]
        )
    return rows
