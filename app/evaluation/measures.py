"""What one case measured, from the stored contracts and artifacts alone; any miss is a defect.

Never from the Reviewer's verdict, which is what the harness keeps honest: the article is
read again here (sections, citations, quotes and code examples at their spans, word count)
on its own terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.agents.article_layout import Layout
from app.evaluation.cases import Case
from app.evaluation.gold import Answers, CorpusText, GoldIndex, baseline
from app.text.documents import MARKDOWN, Document, read_document
from app.text.documents.examples import shown_code
from app.text.primitives import CITATION
from app.text.publishable import without_controls
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
    cited_ids: list[str] = field(default_factory=list)
    """The claims the article cites, each once, in the order it first cites them."""
    answers: Answers | None = None
    """What the article gave of the case's gold answers (None: the case has none)."""
    baseline: Answers | None = None
    """The same of the top BM25 sentences under the same word limit."""

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
    examples = _examples_shown(article, bundle)
    for number, block in enumerate(article.blocks):
        if number in examples.values():
            continue
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
    result.cited_ids = cited_ids
    for claim_id in cited_ids:
        fact = bundle.fact(claim_id)
        if fact is not None and fact.example is not None and claim_id not in examples:
            result.defects.append(f"{claim_id}: its code example is not shown after its sentence")
    questions = case.asked()
    for question in case.code_answers:
        question_id = f"q-{questions.index(question) + 1}"
        if not any(
            question_id in fact.answers
            for fact in map(bundle.fact, examples)
            if fact is not None and fact.example is not None
        ):
            result.defects.append(f"no code example shown answers {question!r}")
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


def check_gold(result: CaseResult, case: Case, corpus: Path, bundle: ResearchBundle | None) -> None:
    """Answer recall and precision of the article and of the baseline, on the case's gold.

    A gold sentence the corpus does not hold is a defect of the case, not of the run.
    """
    if not case.gold:
        return
    text = CorpusText.read(corpus)
    try:
        gold = GoldIndex.of(text, case.gold, case.answerable())
    except ValueError as error:
        result.defects.append(str(error))
        return
    cited = text.cited(bundle, result.cited_ids) if bundle is not None else []
    result.answers = gold.measure(cited)
    words = case.max_words if case.max_words is not None else result.words
    result.baseline = gold.measure(baseline(text, case.asked(), words))


def _examples_shown(article: Document, bundle: ResearchBundle) -> dict[str, int]:
    """The claims whose code example the article shows right after their sentence, by block.

    Such a block names its claim in its info string, holds the example's code, and follows
    a paragraph whose last sentence cites the claim.
    """
    last_sentence = {sentence.block: sentence for sentence in article.sentences}
    shown: dict[str, int] = {}
    last_cited: list[str] = []
    for number, block in enumerate(article.blocks):
        if block.kind != "code":
            said = last_sentence.get(number)
            last_cited = CITATION.findall(said.text) if said else []
            continue
        opening = article.text[block.start : block.end].split("\n", 1)[0]
        for claim_id in CITATION.findall(opening):
            fact = bundle.fact(claim_id)
            if fact is None or fact.example is None or claim_id not in last_cited:
                continue
            code = shown_code(article.text, block.start, block.end, MARKDOWN)
            if code == without_controls(fact.example.shown):
                shown.setdefault(claim_id, number)
    return shown


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
    example = fact.example
    if example is None:
        return None
    if document.text[example.span.start : example.span.end] != example.text:
        return f"{claim_id}: its example is not verbatim at {example.span.start}-{example.span.end}"
    first = document.block_at(example.span.start, example.span.start)
    last = document.block_at(example.span.end, example.span.end)
    if not (first and last and first.kind == last.kind == "code"):
        return f"{claim_id}: its example is not code of {source.id}"
    code = shown_code(
        document.text, example.span.start, example.span.end, source.snapshot.media_type
    )
    if code != example.shown:
        return f"{claim_id}: its example shows other code than {source.id} holds there"
    return None
