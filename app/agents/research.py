"""Offline Research: documents read as documents; facts are prose that addresses the task.

BM25 ranks prose sentences; facts are verbatim quotes with spans, kept only where they
address a question or a required section.

Each source is parsed as markdown (``app/text/documents/``): only prose (paragraphs, list
items, quotes) yields sentences; code, tables, HTML and badge lines never become facts.
A sentence that introduces a code example ("To start a worker, run:") is a fact only
with its example (``Fact.example``, ``app/text/documents/examples.py``).
A sentence is kept for a question only when it addresses it by the rule in
``app/text/relevance.py``; a question no sentence addresses stays open. Each required section
gets the sentences on its topic. A sentence that leans on the one before it
(``app/text/antecedents.py``) brings that one along, or is not used.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from app.agents.corpus_search import search_questions
from app.agents.kept_index import index_corpus
from app.agents.parsed_documents import ParsedDocuments
from app.agents.passages import Passage, Retrieval, claim_id, example_of, source_number
from app.agents.ranking import rank_passages
from app.agents.research_notes import research_notes
from app.agents.source_reading import (
    ReadsSources,
    affordable,
    corpus_fingerprint,
    read_sources,
    standing_tools,
)
from app.corpus.discovery import discover
from app.corpus.reading import CorpusNotFound, CorpusPolicy
from contracts import (
    ErrorCode,
    ErrorDetail,
    Fact,
    Question,
    ResearchBundle,
    ResultStatus,
    Span,
    TaskSpec,
    Usage,
    research_questions,
)
from contracts.research import Confidence
from graphs import AgentOutput, ArtifactStore, ResearchRequest, StepInfo

CORROBORATION_OVERLAP = 0.5
"""Share of a claim's content terms another source's sentence must contain to agree."""


_PAUSING = threading.Lock()
_paused_by: list[bool] = []
"""One entry per research now running with the collector paused: whether the collector
was on when the first of them began (the last to end turns it back on then)."""


@contextmanager
def paused_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while research runs (a decorator, or a ``with``).

    Research makes a few objects per sentence of the corpus (a passage, its sentence, its
    key terms) and none of them in a cycle; the collector would walk them all, several
    times, for garbage that is not there (on 200,000 passages, a third of a later run).
    Reference counting frees them as usual when research is done. Research branches run
    at once in threads, and the switch is the process's: they count under one lock, so
    the collector is paused from the first to begin until the last ends, then left as
    the first found it (never off for good because two of them crossed).
    """
    with _PAUSING:
        _paused_by.append(_paused_by[0] if _paused_by else gc.isenabled())
        gc.disable()
    try:
        yield
    finally:
        with _PAUSING:
            was_on = _paused_by.pop()
            if not _paused_by and was_on:
                gc.enable()


@dataclass
class OfflineResearchAgent(ReadsSources):
    """Deterministic research: same corpus and task, same bundle, byte for byte.

    ``policy`` decides which files may be read at all (roots, regular files, size and time
    limits): a task naming anything else is refused before a byte is read.
    """

    default_corpus: list[Path]
    clock: Callable[[], datetime]
    policy: CorpusPolicy
    max_facts: int = 12
    min_shared_terms: int = 2
    parsed_documents: ParsedDocuments | None = None
    """Where parsed corpus files are kept by content (``app/agents/parsed_documents.py``),
    and each corpus's index by its fingerprint (``app/agents/kept_index.py``); None parses
    every file and builds the index on every run."""

    def locations(self, task: TaskSpec) -> list[Path]:
        """Where this task's corpus is: its own locations, else the default corpus."""
        return [Path(item) for item in task.corpus] or self.default_corpus

    def fingerprint(self, task: TaskSpec) -> str:
        """Hash of the names and bytes of every corpus file: changes mean new research.

        The graph computes it before research starts, so a corpus the policy refuses
        (SourceRefused) stops the run there, before anything is recorded or read.
        """
        return corpus_fingerprint(self.locations(task), self.policy)

    @paused_cycle_collection()
    def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
        """Read every source, rank sentences per question, keep the best as facts."""
        task, store, step = request.task, request.store, request.step
        try:
            found = self.retrieve(request)
        except CorpusNotFound as error:
            return AgentOutput(self.missing_corpus(task, error))
        facts = self._facts(found, step)
        open_questions = [question for question in found.questions if not found.ranked[question.id]]
        bundle = self.bundle(task, found, facts, open_questions, store, step)
        usage = Usage(tool_calls=found.tool_calls)
        return AgentOutput(bundle, usage=usage, receipts=found.receipts)

    @paused_cycle_collection()
    def retrieve(self, request: ResearchRequest) -> Retrieval:
        """The deterministic part of research: read, split into passages, rank with BM25.

        Sources are read within the tool-call budget; passages are ranked per question.
        With ``question_id`` (a research branch) only that question is researched: its
        ranking, the required sections when it is the objective (q-1, whose topic they
        are ranked under), up to ``max_facts`` of its own; the objective is ranked too,
        so a fact names it when it also answers it. No other question is read: a branch's
        result is the same whatever else the task asks, so adding a sub-question reuses
        the other branches (the join merges what several of them found).
        Raises CorpusNotFound when the corpus is missing (see ``missing_corpus``), and
        SourceRefused when the policy refuses a corpus path. Files are read, and each
        question researched is searched for, through the node's ``tools`` (``read_source``,
        ``search_corpus``); outside a node, through the same boundary, reported here.
        """
        task, step, question_id = request.task, request.step, request.question_id
        toolbox = request.tools or standing_tools(self, request.store, step, self.clock)
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
        weighed = list({question.id: question for question in [every[0], *questions]}.values())
        sections = task.constraints.required_sections
        if questions[0] is not every[0]:
            sections = []  # ranked under the objective's topic: its branch covers them
        documents, errors = affordable(documents, step.tool_calls_left, searches=len(questions))
        reads, read_errors = read_sources(documents, toolbox, self.clock)
        sources, index = index_corpus(
            reads,
            self.parsed_documents,
            widen=step.widen,
            min_shared_terms=self.min_shared_terms,
        )
        per_query = 2 * self.max_facts  # candidates; facts are taken round-robin
        searched, search_errors = search_questions(
            questions, every[0], index, toolbox, per_query=per_query
        )
        ranked, by_section = rank_passages(
            weighed, sections, index, per_query=per_query, searched=searched
        )
        return Retrieval(
            questions=questions,
            sources=sources,
            texts={read.document.source_id: read.output.text for read in reads},
            passages=index.passages,
            ranked={question.id: ranked[question.id] for question in questions},
            all_ranked=ranked,
            sections=by_section,
            rarity=index.rarity,
            errors=errors + read_errors + search_errors,
            receipts=[] if request.tools else toolbox.receipts,
            tool_calls=0 if request.tools else toolbox.spent,
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
        text = research_notes(task, found) + notes
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
        for index in sorted(chosen, key=lambda i: (source_number(passages[i]), i)):
            passage = passages[index]
            question_id, rank = chosen[index]
            confidence, corroborating = self.rate(passage.source.id, passage.terms, rank, passages)
            sentence = passage.sentence
            leans = passage.leans and sentence.position > 0
            facts[index] = Fact(
                id=claim_id(passage),
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
                leans_on=claim_id(passages[index - 1]) if leans else None,
                example=example_of(passage, found.texts[passage.source.id]),
                provenance=step.provenance(),
            )
        return list(facts.values())

    def _corroborating(
        self, source_id: str, claim_terms: frozenset[str], passages: list[Passage]
    ) -> list[str]:
        if not claim_terms:
            return []
        agreeing: set[str] = set()
        for other in passages:
            found = other.source.id
            if found == source_id or found in agreeing:
                continue  # one sentence of a source is enough
            if len(claim_terms & other.terms) / len(claim_terms) >= CORROBORATION_OVERLAP:
                agreeing.add(found)
        return sorted(agreeing, key=lambda other: int(other.removeprefix("src-")))

    def _failed(
        self, task: TaskSpec, code: ErrorCode, detail: str, locations: list[Path]
    ) -> ResearchBundle:
        return ResearchBundle(
            task_id=task.task_id,
            result_status="failed",
            errors=[ErrorDetail(code=code, detail=detail, field="corpus")],
            missing_inputs=[str(location) for location in locations],
        )


def _spaced(text: str) -> str:
    return " ".join(text.split())
