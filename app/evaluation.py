"""The evaluation harness: whether a finished run keeps its task.

A fixed set of cases (``evals/cases.json``: tasks × corpora × what must hold) is run on
the agents in force (offline by default; ``HANDOFF_MODEL`` for a model), each in its own
thread on a scratch SQLite file. A run that pauses for a person on open questions is
recorded as paused and then approved, so the article it would publish is checked too.

What is measured, per case, from the stored contracts and artifacts alone (never from
the Reviewer's verdict, which is what this harness keeps honest):

- **structure**: the outcome, bundle and draft validate; the article has its title, its
  required sections, and a Sources list when it cites anything;
- **verbatim**: every cited claim's quote is its source snapshot's text at its span, the
  snapshot has the sha256 research recorded, and the span lies in prose;
- **coverage**: cited sentences ÷ sentences of the article's text;
- **sections**: required sections present, not empty, and on topic (a corpus with nothing
  on a section's topic must leave it empty, never fill it with something else);
- **limits**: the word count (``graphs.markdown.word_count``) within ``max_words``;
- **answerability**: every unanswerable question open, every answerable one answered;
  a case with anything unanswerable ends paused or ``partial``, never ``completed``; one
  with nothing unanswerable ends ``completed``.

Any miss is a defect; ``handoff eval`` exits non-zero when there is one.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.agents.reviewer import Layout
from app.settings import PROJECT_ROOT, Settings
from app.text.documents import Document, read_document
from app.text.primitives import CITATION
from app.text.relevance import off_topic
from contracts import DraftArticle, ErrorCode, ResearchBundle, RunOutcome, TaskState
from graphs.errors import ExitCode, HandoffError
from graphs.markdown import SOURCES_HEADING, apparatus_heading, word_count

DEFAULT_CASES = PROJECT_ROOT / "evals" / "cases.json"


class UnknownCase(HandoffError, LookupError):
    """A case id the cases file does not have."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


class InvalidCases(HandoffError, ValueError):
    """A cases file that cannot be read or does not follow the case schema."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


class Case(BaseModel):
    """One evaluation case, as written in the cases file."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    corpus: str = Field(min_length=1, description="Folder, relative to the cases file.")
    objective: str = Field(min_length=3)
    questions: list[str] = Field(default_factory=list)
    required_sections: list[str] = Field(default_factory=list)
    max_words: int | None = None
    unanswerable: list[str] = Field(default_factory=list)
    uncovered_sections: list[str] = Field(default_factory=list)
    expect: str = Field(pattern=r"^(completed|open)$")
    notes: str = ""


def load_cases(path: Path = DEFAULT_CASES) -> list[tuple[Case, Path]]:
    """The cases of a file, each with its corpus resolved; bad input names the field."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InvalidCases(f"cannot read evaluation cases {path}: {error}") from error
    if not isinstance(raw, list):
        raise InvalidCases(f"{path}: expected a JSON list of cases, got {type(raw).__name__}")
    cases: list[tuple[Case, Path]] = []
    for index, item in enumerate(raw):
        try:
            case = Case.model_validate(item)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InvalidCases(f"{path}: case [{index}] field {where}: {first['msg']}") from None
        corpus = (path.parent / case.corpus).resolve()
        if not corpus.is_dir():
            raise InvalidCases(f"{path}: case {case.id!r} corpus {case.corpus!r} is not a folder")
        cases.append((case, corpus))
    ids = [case.id for case, _ in cases]
    if len(ids) != len(set(ids)):
        raise InvalidCases(f"{path}: case ids must be unique")
    return cases


@dataclass
class CaseResult:
    """What one case measured, and its defects."""

    case: Case
    status: str = ""
    """The first run's end: completed, partial, failed, or paused (waiting on a person)."""
    final: str = ""
    """The result after a pause was approved (same as ``status`` when nothing paused)."""
    open_questions: list[str] = field(default_factory=list)
    cited: int = 0
    verbatim: int = 0
    sentences: int = 0
    words: int = 0
    sections_ok: int = 0
    defects: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        """Cited sentences ÷ sentences of the article's text."""
        return self.cited_sentences / self.sentences if self.sentences else 0.0

    cited_sentences: int = 0


def evaluate(
    cases: list[tuple[Case, Path]],
    settings: Settings,
    *,
    progress: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run every case on a scratch database and measure what it produced."""
    from app.workflow import Workflow  # the harness drives the public API

    results: list[CaseResult] = []
    roots = sorted({corpus for _, corpus in cases})
    with tempfile.TemporaryDirectory(prefix="handoff-eval-") as scratch:
        scratch_settings = settings.with_overrides(
            data_dir=Path(scratch),
            database_url=f"sqlite:///{scratch}/eval.db",
            artifact_dir=None,
            corpus_roots=[*settings.corpus_roots, *roots],
        )
        with Workflow(scratch_settings) as workflow:
            for case, corpus in cases:
                result = _run_case(workflow, case, corpus)
                results.append(result)
                if progress is not None:
                    progress(result)
    return results


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
    _check_answerability(result, case, bundle)
    body: str | None = None
    if outcome.article is not None:
        body = store.get(outcome.article).decode("utf-8")
    elif isinstance(draft, DraftArticle):
        body = store.get(draft.body).decode("utf-8")
    if body is not None and isinstance(bundle, ResearchBundle):
        _check_article(result, case, bundle, body, store)
    elif case.expect == "completed":
        result.defects.append("no article was written")
    return result


def _ending(outcome: RunOutcome) -> str:
    """How a run ended: paused for a person, or its result status."""
    if outcome.state == TaskState.INPUT_REQUIRED:
        return "paused"
    return outcome.result_status or outcome.state.value


def _check_answerability(result: CaseResult, case: Case, bundle: Any) -> None:
    opened = [question.text for question in bundle.open_questions] if bundle else []
    result.open_questions = opened
    for question in case.unanswerable:
        if question not in opened:
            result.defects.append(f"unanswerable question treated as answered: {question!r}")
    for question in [case.objective, *case.questions]:
        if question not in case.unanswerable and question in opened:
            result.defects.append(f"answerable question left open: {question!r}")
    unresolved = bool(case.unanswerable or case.uncovered_sections)
    if unresolved and result.status == "completed":
        result.defects.append("a case with something unanswerable ended completed")
    if not unresolved and result.status != "completed":
        result.defects.append(f"an answerable case ended {result.status}, not completed")


def _check_article(
    result: CaseResult, case: Case, bundle: ResearchBundle, body: str, store: Any
) -> None:
    article = read_document(body)
    layout = Layout.of(body)
    documents: dict[str, Document] = {}
    by_section: dict[str | None, list[list[str]]] = {}
    cited_ids: list[str] = []
    if not body.startswith("# "):
        result.defects.append("the article has no title")
    for block in article.blocks:
        heading = layout.section_at(block.start)
        if heading is not None and apparatus_heading(f"## {heading}"):
            continue
        if not block.prose and block.kind != "heading":
            result.defects.append(f"non-prose {block.kind} in the article")
    for sentence in article.sentences:
        heading = layout.section_at(sentence.start)
        if heading is not None and apparatus_heading(f"## {heading}"):
            continue
        result.sentences += 1
        ids = CITATION.findall(sentence.text)
        if ids:
            result.cited_sentences += 1
            by_section.setdefault(heading, []).append(ids)
            cited_ids += [claim for claim in ids if claim not in cited_ids]
        else:
            result.defects.append(f"uncited sentence: {sentence.plain[:80]!r}")
    result.cited = len(cited_ids)
    listed = layout.text_of(SOURCES_HEADING)
    for claim_id in cited_ids:
        problem = _verbatim_problem(claim_id, bundle, store, documents)
        if problem:
            result.defects.append(problem)
        else:
            result.verbatim += 1
        fact = bundle.fact(claim_id)
        if fact is not None and not re.search(rf"\b{fact.source_id}\b", listed):
            result.defects.append(f"{claim_id}: {fact.source_id} missing from the Sources list")
    result.words = word_count(body)
    if case.max_words is not None and result.words > case.max_words:
        result.defects.append(f"{result.words} words, over the limit of {case.max_words}")
    titles = {title.casefold(): title for title in layout.titles}
    for title in case.required_sections:
        found = titles.get(title.casefold())
        sentences = by_section.get(found, []) if found else []
        on, too_few = off_topic(title, sentences, bundle)
        if title in case.uncovered_sections:
            if sentences and too_few:
                result.defects.append(f"section {title!r} filled with off-topic text")
            continue
        if found is None:
            result.defects.append(f"required section {title!r} missing")
        elif not sentences:
            result.defects.append(f"required section {title!r} empty")
        elif too_few:
            result.defects.append(f"required section {title!r} off topic ({on}/{len(sentences)})")
        else:
            result.sections_ok += 1


def _verbatim_problem(
    claim_id: str, bundle: ResearchBundle, store: Any, documents: dict[str, Document]
) -> str | None:
    fact = bundle.fact(claim_id)
    if fact is None:
        return f"{claim_id} is not a fact of the research bundle"
    source = bundle.source(fact.source_id)
    if source is None:
        return f"{claim_id} cites {fact.source_id}, which research did not read"
    if source.snapshot.sha256 != source.sha256:
        return f"{claim_id}: snapshot of {source.id} is not the hash research read"
    if source.id not in documents:
        text = store.get(source.snapshot).decode("utf-8")
        documents[source.id] = read_document(text, source.snapshot.media_type)
    document = documents[source.id]
    if document.text[fact.span.start : fact.span.end] != fact.quote:
        return f"{claim_id}: quote is not verbatim at {fact.span.start}-{fact.span.end}"
    block = document.block_at(fact.span.start, fact.span.end)
    if block is None or not block.prose:
        return f"{claim_id}: quotes {block.kind if block else 'text across blocks'}, not prose"
    return None


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
