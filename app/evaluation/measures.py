"""What one case measured, from the stored contracts and artifacts alone; any miss is a defect.

Never from the Reviewer's verdict, which is what the harness keeps honest: the article is
read again here (sections, citations, quotes at their spans, word count) on its own terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.agents.article_layout import Layout
from app.evaluation.cases import Case
from app.text.documents import Document, read_document
from app.text.primitives import CITATION
from app.text.relevance import off_topic
from contracts import ResearchBundle
from graphs.markdown import SOURCES_HEADING, word_count


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


def check_answerability(result: CaseResult, case: Case, bundle: Any) -> None:
    """Unanswerable questions open, answerable ones answered, and the ending to match."""
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


def check_article(
    result: CaseResult, case: Case, bundle: ResearchBundle, body: str, store: Any
) -> None:
    """Structure, verbatim quotes, coverage, sections and the word limit of one article."""
    article = read_document(body)
    layout = Layout.of(body)
    documents: dict[str, Document] = {}
    by_section: dict[str | None, list[list[str]]] = {}
    cited_ids: list[str] = []
    if not body.startswith("# "):
        result.defects.append("the article has no title")
    for block in article.blocks:
        if not block.prose and block.kind != "heading" and not layout.in_apparatus(block.start):
            result.defects.append(f"non-prose {block.kind} in the article")
    for sentence in article.sentences:
        if layout.in_apparatus(sentence.start):
            continue
        heading = layout.section_at(sentence.start)
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
