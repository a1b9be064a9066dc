"""Offline Research: documents read as documents; facts are prose that addresses the task.

BM25 ranks prose sentences; facts are verbatim quotes with spans, kept only where they
address a question or a required section.

Each source is parsed as markdown (``app/text/documents/``): only prose (paragraphs, list
items, quotes) yields sentences; code, tables, HTML and badge lines never become facts.
A sentence is kept for a question only when it addresses it by the rule in
``app/text/relevance.py``; a question no sentence addresses stays open. Each required section
gets the sentences on its topic. A sentence that leans on the one before it
(``app/text/antecedents.py``) brings that one along, or is not used.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import bm25s
import numpy as np

from app.agents.apparatus import file_name
from app.corpus.reading import (
    CorpusDocument,
    CorpusNotFound,
    CorpusPolicy,
    decode,
    discover,
    sha256_of,
)
from app.text.antecedents import leans_on_earlier
from app.text.documents import Document, ProseSentence, read_document
from app.text.primitives import word_count
from app.text.relevance import Rarity, heading_keys, keys, on_topic, query_keys
from contracts import (
    ErrorCode,
    ErrorDetail,
    Fact,
    LineRange,
    Question,
    ResearchBundle,
    ResultStatus,
    Source,
    Span,
    TaskSpec,
    ToolReceipt,
    Usage,
    research_questions,
)
from contracts.research import Confidence
from graphs import AgentOutput, ArtifactStore, ResearchRequest, StepInfo
from graphs.errors import SourceRefused

CORROBORATION_OVERLAP = 0.5
"""Share of a claim's content terms another source's sentence must contain to agree."""
MIN_FACT_WORDS = 4
"""Fewer words than this is a label or a fragment, not a statement worth citing."""
_RUN_IN_HEADING = re.compile(r"(\*\*|__)[^*_]+?[.:]?\1[.:]?")
"""A sentence all in bold ("**Configuring runs per assistant.**"): a heading run into its
paragraph, a label rather than a statement."""


@dataclass(frozen=True)
class Passage:
    """A prose sentence of a source, the unit BM25 ranks, with what a reader needs of it."""

    source: Source
    sentence: ProseSentence
    terms: frozenset[str]
    """Key terms of the sentence itself."""
    headings: frozenset[str]
    """Key terms of its section path (not the document title)."""
    context: frozenset[str]
    """Its own key terms with those of its section path and document title."""
    lines: LineRange
    leans: bool
    """It leans on the sentence before it in its paragraph (``app/text/antecedents.py``)."""

    @property
    def usable(self) -> bool:
        """Whether it can be a fact: a statement, not a pronoun with nothing before it.

        A label, a lead-in to a list or code, and a question are no statements.
        """
        plain = self.sentence.plain
        if plain.endswith((":", "：", "?", "？")) or word_count(plain) < MIN_FACT_WORDS:
            return False  # it introduces what follows, or asks: no statement to cite
        if _RUN_IN_HEADING.fullmatch(self.sentence.text.strip()):
            return False
        return not (self.leans and self.sentence.position == 0)


@dataclass
class Retrieval:
    """What deterministic retrieval found; model-backed research proposes claims from it."""

    questions: list[Question]
    sources: list[Source]
    texts: dict[str, str]
    """Decoded text of each source read, by source id (what the snapshots hold)."""
    passages: list[Passage]
    ranked: dict[str, list[tuple[int, float]]]
    """Per question researched: passage indexes with BM25 scores, best first (addressing
    it only)."""
    sections: dict[str, list[tuple[int, float]]]
    """Per required section title: passage indexes on its topic, best first."""
    rarity: Rarity
    errors: list[ErrorDetail]
    receipts: list[ToolReceipt]
    tool_calls: int
    all_ranked: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    """Per question of the task (not only those researched): what addresses it, so a fact
    names every question it also answers (defaults to ``ranked``)."""

    def answering(self, passage: Passage) -> list[str]:
        """The questions this passage addresses (it is in their ranking), in order."""
        return self._answers.get((passage.source.id, passage.sentence.start), [])

    @functools.cached_property
    def _answers(self) -> dict[tuple[str, int], list[str]]:
        found: dict[tuple[str, int], list[str]] = {}
        for question_id, hits in (self.all_ranked or self.ranked).items():
            for index, _ in hits:
                passage = self.passages[index]
                found.setdefault((passage.source.id, passage.sentence.start), []).append(
                    question_id
                )
        return found


@dataclass
class OfflineResearchAgent:
    """Deterministic research: same corpus and task, same bundle, byte for byte.

    ``policy`` decides which files may be read at all (roots, regular files, size and time
    limits): a task naming anything else is refused before a byte is read.
    """

    default_corpus: list[Path]
    clock: Callable[[], datetime]
    policy: CorpusPolicy
    max_facts: int = 12
    min_shared_terms: int = 2

    def locations(self, task: TaskSpec) -> list[Path]:
        """Where this task's corpus is: its own locations, else the default corpus."""
        return [Path(item) for item in task.corpus] or self.default_corpus

    def fingerprint(self, task: TaskSpec) -> str:
        """Hash of the names and bytes of every corpus file: changes mean new research.

        The graph computes it before research starts, so a corpus the policy refuses
        (SourceRefused) stops the run there, before anything is recorded or read.
        """
        digest = hashlib.sha256()
        try:
            documents = discover(self.locations(task), self.policy)
        except CorpusNotFound as error:
            digest.update(f"missing:{error}".encode())
            return digest.hexdigest()
        for document in documents:
            digest.update(str(document.path).encode() + b"\0")
            try:
                digest.update(self.policy.sha256(document.path).encode())
            except (OSError, SourceRefused) as error:
                digest.update(f"unreadable:{error}".encode())
        return digest.hexdigest()

    def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
        """Read every source, rank sentences per question, keep the best as facts."""
        task, store, step = request.task, request.store, request.step
        try:
            found = self.retrieve(task, store, step, request.question_id)
        except CorpusNotFound as error:
            return AgentOutput(self.missing_corpus(task, error))
        facts = self._facts(found, step)
        open_questions = [question for question in found.questions if not found.ranked[question.id]]
        bundle = self.bundle(task, found, facts, open_questions, store, step)
        return AgentOutput(
            bundle, usage=Usage(tool_calls=found.tool_calls), receipts=found.receipts
        )

    def retrieve(
        self,
        task: TaskSpec,
        store: ArtifactStore,
        step: StepInfo,
        question_id: str | None = None,
    ) -> Retrieval:
        """The deterministic part of research: read, split into passages, rank with BM25.

        Sources are read within the tool-call budget; passages are ranked per question.
        With ``question_id`` (a research branch) only that question is researched: its
        ranking, the required sections when it is the objective (q-1, whose topic they
        are ranked under), up to ``max_facts`` of its own; every question is still
        ranked, so a fact names all the questions it also answers.
        Raises CorpusNotFound when the corpus is missing (see ``missing_corpus``), and
        SourceRefused when the policy refuses a corpus path.
        """
        documents = discover(self.locations(task), self.policy)
        every = research_questions(task)
        questions = every
        if question_id is not None:
            questions = [question for question in every if question.id == question_id]
            if not questions:
                raise ValueError(
                    f"no research question {question_id!r}; the task has "
                    f"{[question.id for question in every]}"
                )
        sections = task.constraints.required_sections
        if questions[0] is not every[0]:
            sections = []  # ranked under the objective's topic: its branch covers them
        errors: list[ErrorDetail] = []
        if step.tool_calls_left is not None:
            affordable = max(0, step.tool_calls_left - len(questions))
            if affordable < len(documents):
                skipped = documents[affordable:]
                documents = documents[:affordable]
                errors.append(
                    ErrorDetail(
                        code=ErrorCode.BUDGET_EXHAUSTED,
                        detail=f"tool-call budget allows reading {affordable} of "
                        f"{affordable + len(skipped)} sources; skipped "
                        + ", ".join(document.source_id for document in skipped),
                        field="budget.max_tool_calls",
                    )
                )
        sources, parsed, read_errors, receipts = self._read_sources(documents, store, step)
        passages = [
            passage for source in sources for passage in _passages(source, parsed[source.id])
        ]
        by_source: dict[str, frozenset[str]] = {}
        for passage in passages:
            by_source[passage.source.id] = by_source.get(passage.source.id, frozenset()) | (
                passage.context
            )
        titles = [heading_keys((), source.title) for source in sources]  # else the file name
        rarity = Rarity.of((passage.terms for passage in passages), by_source.values(), titles)
        ranked, by_section = self._rank(every, sections, passages, rarity, widen=step.widen)
        return Retrieval(
            questions=questions,
            sources=sources,
            texts={source_id: document.text for source_id, document in parsed.items()},
            passages=passages,
            ranked={question.id: ranked[question.id] for question in questions},
            all_ranked=ranked,
            sections=by_section,
            rarity=rarity,
            errors=errors + read_errors,
            receipts=receipts,
            tool_calls=len(documents) + len(questions),
        )

    def bundle(
        self,
        task: TaskSpec,
        found: Retrieval,
        facts: list[Fact],
        open_questions: list[Question],
        store: ArtifactStore,
        step: StepInfo,
        *,
        errors: list[ErrorDetail] | None = None,
        notes: str = "",
    ) -> ResearchBundle:
        """The bundle for these facts, with the retrieval notes stored as an artifact.

        The status follows the errors (retrieval's, then ``errors``); no facts means
        insufficient evidence.
        """
        problems = found.errors + list(errors or [])
        text = self._notes(task, found) + notes
        ref = store.put(step.branch_artifact_id("notes"), "notes", text.encode(), "text/markdown")
        if not facts:
            problems.append(
                ErrorDetail(
                    code=ErrorCode.INSUFFICIENT_EVIDENCE,
                    detail="no sentence in the corpus addresses "
                    + "; ".join(f"{question.id} {question.text!r}" for question in open_questions)[
                        :1900
                    ],
                )
            )
        status: ResultStatus = (
            "failed" if not facts else ("partial" if problems or open_questions else "completed")
        )
        return ResearchBundle(
            task_id=task.task_id,
            result_status=status,
            facts=facts,
            sources=found.sources,
            open_questions=open_questions,
            artifact_refs=[ref],
            errors=problems,
            retryable=any(error.code == ErrorCode.SOURCE_UNREADABLE for error in problems),
            missing_inputs=[],
            widened=step.widen,
        )

    def missing_corpus(self, task: TaskSpec, error: CorpusNotFound) -> ResearchBundle:
        """A failed bundle naming the corpus locations that could not be found."""
        return self._failed(task, ErrorCode.MISSING_INPUT, str(error), self.locations(task))

    def rate(
        self, source_id: str, claim_terms: frozenset[str], rank: int, passages: list[Passage]
    ) -> tuple[Confidence, list[str]]:
        """Confidence by the documented rule, and the sources that corroborate the claim."""
        corroborating = self._corroborating(source_id, claim_terms, passages)
        if corroborating:
            return "high", corroborating
        return ("medium" if rank < 3 else "low"), []

    def _read_sources(
        self, documents: list[CorpusDocument], store: ArtifactStore, step: StepInfo
    ) -> tuple[list[Source], dict[str, Document], list[ErrorDetail], list[ToolReceipt]]:
        sources: list[Source] = []
        parsed: dict[str, Document] = {}
        errors: list[ErrorDetail] = []
        receipts: list[ToolReceipt] = []
        for document in documents:
            try:
                data = self.policy.read(document.path, "corpus file")
                text = decode(data, document.path)
            except (OSError, SourceRefused) as error:
                errors.append(
                    ErrorDetail(
                        code=ErrorCode.SOURCE_UNREADABLE,
                        source_id=document.source_id,
                        detail=f"could not read {document.path.name}: {error}"[:2000],
                    )
                )
                continue
            digest = sha256_of(data)
            document_read = read_document(text, document.media_type)
            snapshot = store.put(
                step.artifact_id(document.source_id), "source", data, document.media_type
            )
            source = Source(
                id=document.source_id,
                uri=document.path.as_uri(),
                title=(document_read.title or document.path.stem)[:300],
                retrieved_at=self.clock(),
                sha256=digest,
                snapshot=snapshot,
            )
            sources.append(source)
            parsed[source.id] = document_read
            receipts.append(
                ToolReceipt(
                    tool="read_source",
                    call_id=f"read-{document.source_id}",
                    input_summary=document.path.name,
                    output_sha256=digest,
                    provenance=step.provenance(),
                )
            )
        return sources, parsed, errors, receipts

    def _rank(
        self,
        questions: list[Question],
        sections: list[str],
        passages: list[Passage],
        rarity: Rarity,
        *,
        widen: bool = False,
    ) -> tuple[dict[str, list[tuple[int, float]]], dict[str, list[tuple[int, float]]]]:
        """Per question, the passages that address it; per section, those on its topic.

        BM25 finds the candidates (a sentence with its section headings; widened, with its
        document title too); those that address a question are ordered by how much of it
        they cover, then by BM25. A first pass also asks a sentence to share two of a question's
        terms; the widened pass asks one. Neither pass admits a sentence that does not
        address the question (``app/text/relevance.py``): widening finds more, never answers
        what the corpus does not.
        """
        ranked: dict[str, list[tuple[int, float]]] = {question.id: [] for question in questions}
        by_section: dict[str, list[tuple[int, float]]] = {title: [] for title in sections}
        usable = [index for index, passage in enumerate(passages) if passage.usable]
        if not usable:
            return ranked, by_section
        per_query = 2 * self.max_facts  # candidates; facts are taken round-robin, max_facts in all
        indexed = [
            passages[index].terms
            | passages[index].headings
            | (passages[index].context if widen else frozenset())
            for index in usable
        ]
        retriever = bm25s.BM25()
        retriever.index([sorted(found) or ["\x00"] for found in indexed], show_progress=False)

        def best(
            query: frozenset[str], topic: frozenset[str] = frozenset()
        ) -> list[tuple[int, float, frozenset[str]]]:
            scores = np.asarray(retriever.get_scores(sorted(query)))
            if topic:  # among sentences on the query's topic, those about the topic first
                boost = np.asarray(retriever.get_scores(sorted(topic)))
                scores = scores * (1 + boost / max(float(boost.max()), 1e-9))
            order = sorted(range(len(usable)), key=lambda at: (-float(scores[at]), at))
            return [
                (usable[at], round(float(scores[at]), 6), indexed[at])
                for at in order
                if scores[at] > 0
            ]

        for position, question in enumerate(questions):
            query = query_keys(question.text)
            if not query:
                continue
            needed = 1 if widen else min(self.min_shared_terms, len(query))
            candidates = best(query)
            addressing = [
                (round(rarity.coverage(query, passages[index].context), 2), score, index)
                for index, score, found in candidates
                if len(found & query) >= needed and rarity.addresses(query, passages[index].context)
            ]
            addressing.sort(key=lambda item: (-item[0], -item[1], item[2]))  # best answer first
            ranked[question.id] = [(index, score) for _, score, index in addressing[:per_query]]
            if position == 0 and not ranked[question.id]:
                ranked[question.id] = self._together(query, candidates, passages, rarity)
        topic = query_keys(questions[0].text) if questions else frozenset()
        anchors = rarity.anchors(topic)
        about = {passage.source.id for passage in passages if anchors & passage.context}
        for title in sections:  # on the title's topic, from documents about the objective
            for index, score, _ in best(query_keys(title), topic):
                if len(by_section[title]) >= per_query:
                    break
                source = passages[index].source.id
                if on_topic(title, passages[index].context) and (not anchors or source in about):
                    by_section[title].append((index, score))
        return ranked, by_section

    @staticmethod
    def _together(
        query: frozenset[str],
        candidates: list[tuple[int, float, frozenset[str]]],
        passages: list[Passage],
        rarity: Rarity,
    ) -> list[tuple[int, float]]:
        """The objective addressed by a few sentences of one document together, if any."""
        by_source: dict[str, list[tuple[int, float]]] = {}
        for index, score, _ in candidates:
            by_source.setdefault(passages[index].source.id, []).append((index, score))
        best: list[tuple[int, float]] = []
        best_coverage = 0.0
        for hits in by_source.values():
            contexts = [passages[index].context for index, _ in hits]
            chosen = [hits[at] for at in rarity.together(query, contexts)]
            covered = frozenset().union(*(passages[index].context for index, _ in chosen))
            coverage = rarity.coverage(query, covered) if chosen else 0.0
            if coverage > best_coverage:
                best, best_coverage = chosen, coverage
        return sorted(best, key=lambda hit: (-hit[1], hit[0]))

    def _facts(self, found: Retrieval, step: StepInfo) -> list[Fact]:
        """The chosen passages as facts, each leaning one with the sentence it leans on.

        Passages are taken round-robin over the questions, then the sections, so each gets
        coverage before any gets depth.
        """
        passages = found.passages
        chosen: dict[int, tuple[str | None, int]] = {}
        queries: list[tuple[str | None, list[tuple[int, float]]]] = [
            *found.ranked.items(),
            *((None, hits) for hits in found.sections.values()),
        ]
        depth = max((len(hits) for _, hits in queries), default=0)
        for position in range(depth):
            for question_id, hits in queries:
                if position < len(hits) and len(chosen) < self.max_facts:
                    chosen.setdefault(hits[position][0], (question_id, position))
        for index in list(chosen):
            at = index
            while passages[at].leans and passages[at].sentence.position > 0:
                at -= 1  # the sentence before it in its paragraph: the one it leans on
                chosen.setdefault(at, (None, 3))
        facts: dict[int, Fact] = {}
        for index in sorted(chosen, key=lambda i: (_source_number(passages[i]), i)):
            passage = passages[index]
            question_id, rank = chosen[index]
            confidence, corroborating = self.rate(passage.source.id, passage.terms, rank, passages)
            sentence = passage.sentence
            leans = passage.leans and sentence.position > 0
            facts[index] = Fact(
                id=_claim_id(passage),
                claim=sentence.plain if sentence.plain != _spaced(sentence.text) else None,
                source_id=passage.source.id,
                quote=sentence.text,
                span=Span(start=sentence.start, end=sentence.end),
                confidence=confidence,
                corroborating_source_ids=corroborating,
                question_id=question_id,
                also_answers=[other for other in found.answering(passage) if other != question_id],
                section=list(sentence.section)[-12:],
                lines=passage.lines,
                leans_on=_claim_id(passages[index - 1]) if leans else None,
                provenance=step.provenance(),
            )
        return list(facts.values())

    def _corroborating(
        self, source_id: str, claim_terms: frozenset[str], passages: list[Passage]
    ) -> list[str]:
        if not claim_terms:
            return []
        agreeing = {
            other.source.id
            for other in passages
            if other.source.id != source_id
            and len(claim_terms & other.terms) / len(claim_terms) >= CORROBORATION_OVERLAP
        }
        return sorted(agreeing, key=lambda other: int(other.removeprefix("src-")))

    def _notes(self, task: TaskSpec, found: Retrieval) -> str:
        lines = [f"# Research notes: {task.objective}", "", "## Sources read", ""]
        lines += [
            f"- {source.id}: *{source.title}*, {file_name(source)} (sha256 {source.sha256[:12]})"
            for source in found.sources
        ]
        lines.append("")
        queries = [
            *(
                (f"{question.id}: {question.text}", found.ranked[question.id])
                for question in found.questions
            ),
            *((f"section {title!r}", hits) for title, hits in found.sections.items()),
        ]
        for heading, hits in queries:
            lines += [f"## {heading}", ""]
            if not hits:
                lines += ["No sentence in the corpus addresses it.", ""]
            for rank, (index, score) in enumerate(hits, start=1):
                passage = found.passages[index]
                lines.append(
                    f"{rank}. [{passage.source.id} {file_name(passage.source)}, lines "
                    f"{passage.lines.first}-"
                    f"{passage.lines.last}, chars {passage.sentence.start}-"
                    f"{passage.sentence.end}, score {score:.3f}] {passage.sentence.plain}"
                )
            lines.append("")
        return "\n".join(lines)

    def _failed(
        self, task: TaskSpec, code: ErrorCode, detail: str, locations: list[Path]
    ) -> ResearchBundle:
        return ResearchBundle(
            task_id=task.task_id,
            result_status="failed",
            errors=[ErrorDetail(code=code, detail=detail, field="corpus")],
            missing_inputs=[str(location) for location in locations],
        )


def _passages(source: Source, document: Document) -> list[Passage]:
    """The prose sentences of a parsed source, as passages."""
    title = heading_keys((), source.title)  # the file name when untitled
    found: list[Passage] = []
    for sentence in document.sentences:
        own = keys(sentence.plain)
        path = sentence.section
        headings = heading_keys(path[1:] if path[:1] == (document.title,) else path)
        first, last = document.lines_of(sentence.start, sentence.end)
        found.append(
            Passage(
                source=source,
                sentence=sentence,
                terms=own,
                headings=headings,
                context=own | headings | title,
                lines=LineRange(first=first, last=last),
                leans=leans_on_earlier(sentence.plain),
            )
        )
    return found


def _source_number(passage: Passage) -> int:
    return int(passage.source.id.removeprefix("src-"))


def _claim_id(passage: Passage) -> str:
    """``claim-<source number><sentence number, 3 digits>``: stable for the same corpus."""
    return f"claim-{_source_number(passage)}{passage.sentence.index + 1:03d}"


def _spaced(text: str) -> str:
    return " ".join(text.split())
