"""The results as ``handoff eval`` prints them: a markdown table, or JSON with ``--json``."""

from __future__ import annotations

from typing import Any

from app.evaluation.measures import CaseResult


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
    "defects",
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
            str(len(result.defects)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    total = sum(len(result.defects) for result in results)
    lines += ["", f"{len(results)} cases, {total} defects"]
    for result in results:
        lines += [f"- {result.case.id}: {defect}" for defect in result.defects]
    return "\n".join(lines)
