"""Offline Research: BM25 over corpus sentences, facts as verbatim quotes with spans."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import bm25s
import numpy as np

from app.corpus import (
    CorpusDocument,
    CorpusNotFound,
    CorpusPolicy,
    decode,
    discover,
    sha256_of,
)
from app.text import Sentence, sentences, terms, title_of
from contracts import (
    ErrorCode,
    ErrorDetail,
    Fact,
    Question,
    ResearchBundle,
    ResultStatus,
    Source,
    Span,
    TaskSpec,
    ToolReceipt,
    Usage,
)
from contracts.research import Confidence
from graphs import AgentOutput, ArtifactStore, ResearchRequest, StepInfo
from graphs.errors import SourceRefused

CORROBORATION_OVERLAP = 0.5
"""Share of a claim's content terms another source's sentence must contain to agree."""


@dataclass(frozen=True)
class Passage:
    """A sentence of a source, the unit BM25 ranks."""

    source: Source
    sentence: Sentence
    terms: frozenset[str]


@dataclass
class Retrieval:
    """What deterministic retrieval found; model-backed research proposes claims from it."""

    questions: list[Question]
    sources: list[Source]
    texts: dict[str, str]
    """Decoded text of each source read, by source id (what the snapshots hold)."""
    passages: list[Passage]
    ranked: dict[str, list[tuple[int, float]]]
    """Per question id: passage indexes with BM25 scores, best first."""
    errors: list[ErrorDetail]
    receipts: list[ToolReceipt]
    tool_calls: int


@dataclass
class OfflineResearchAgent:
    """Deterministic research: same corpus and task, same bundle, byte for byte.

    ``policy`` decides which files may be read at all (roots, regular files, size and time
    limits): a task naming anything else is refused before a byte is read.
    """

    default_corpus: list[Path]
    clock: Callable[[], datetime]
    policy: CorpusPolicy
    max_facts: int = 10
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
            found = self.retrieve(task, store, step)
        except CorpusNotFound as error:
            return AgentOutput(self.missing_corpus(task, error))
        facts = self._facts(found.ranked, found.passages, step)
        open_questions = [question for question in found.questions if not found.ranked[question.id]]
        bundle = self.bundle(task, found, facts, open_questions, store, step)
        return AgentOutput(
            bundle, usage=Usage(tool_calls=found.tool_calls), receipts=found.receipts
        )

    def retrieve(self, task: TaskSpec, store: ArtifactStore, step: StepInfo) -> Retrieval:
        """The deterministic part of research: read, split into passages, rank with BM25.

        Sources are read within the tool-call budget; passages are ranked per question.
        Raises CorpusNotFound when the corpus is missing (see ``missing_corpus``), and
        SourceRefused when the policy refuses a corpus path.
        """
        documents = discover(self.locations(task), self.policy)
        questions = [
            Question(id=f"q-{index + 1}", text=text)
            for index, text in enumerate(task.research_questions())
        ]
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
        sources, texts, read_errors, receipts = self._read_sources(documents, store, step)
        passages = [
            Passage(source=source, sentence=sentence, terms=frozenset(terms(sentence.text)))
            for source in sources
            for sentence in sentences(texts[source.id])
        ]
        return Retrieval(
            questions=questions,
            sources=sources,
            texts=texts,
            passages=passages,
            ranked=self._rank(questions, passages, widen=step.widen),
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
        text = self._notes(task, found.questions, found.ranked, found.passages) + notes
        ref = store.put(step.artifact_id("notes"), "notes", text.encode(), "text/markdown")
        step.fault("after_artifact")
        if not facts:
            problems.append(
                ErrorDetail(
                    code=ErrorCode.INSUFFICIENT_EVIDENCE,
                    detail="no sentence in the corpus matches the objective",
                )
            )
        status: ResultStatus = "failed" if not facts else ("partial" if problems else "completed")
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
    ) -> tuple[list[Source], dict[str, str], list[ErrorDetail], list[ToolReceipt]]:
        sources: list[Source] = []
        texts: dict[str, str] = {}
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
            snapshot = store.put(
                step.artifact_id(document.source_id), "source", data, document.media_type
            )
            source = Source(
                id=document.source_id,
                uri=document.path.as_uri(),
                title=title_of(text, document.path.stem),
                retrieved_at=self.clock(),
                sha256=digest,
                snapshot=snapshot,
            )
            sources.append(source)
            texts[source.id] = text
            receipts.append(
                ToolReceipt(
                    tool="read_source",
                    call_id=f"read-{document.source_id}",
                    input_summary=document.path.name,
                    output_sha256=digest,
                    provenance=step.provenance(),
                )
            )
        return sources, texts, errors, receipts

    def _rank(
        self, questions: list[Question], passages: list[Passage], *, widen: bool = False
    ) -> dict[str, list[tuple[int, float]]]:
        """Per question: passage indexes with scores, best first, relevant ones only."""
        ranked: dict[str, list[tuple[int, float]]] = {question.id: [] for question in questions}
        per_question = max(3, -(-self.max_facts // max(1, len(questions))))
        if not passages:
            return ranked
        retriever = bm25s.BM25()
        retriever.index(
            [sorted(passage.terms) or ["\x00"] for passage in passages], show_progress=False
        )
        for question in questions:
            query = frozenset(terms(question.text))
            if not query:
                continue
            scores = np.asarray(retriever.get_scores(sorted(query)))
            needed = 1 if widen else min(self.min_shared_terms, len(query))
            order = sorted(range(len(passages)), key=lambda index: (-float(scores[index]), index))
            for index in order:
                if scores[index] <= 0 or len(ranked[question.id]) >= per_question:
                    break
                if len(passages[index].terms & query) >= needed:
                    ranked[question.id].append((index, round(float(scores[index]), 6)))
        return ranked

    def _facts(
        self, ranked: dict[str, list[tuple[int, float]]], passages: list[Passage], step: StepInfo
    ) -> list[Fact]:
        chosen: dict[int, tuple[str, int]] = {}
        depth = max((len(hits) for hits in ranked.values()), default=0)
        for position in range(depth):  # round-robin across questions so each gets coverage
            for question_id, hits in ranked.items():
                if position < len(hits) and len(chosen) < self.max_facts:
                    chosen.setdefault(hits[position][0], (question_id, position))
        facts = []
        for index in sorted(
            chosen, key=lambda i: (passages[i].source.id, passages[i].sentence.start)
        ):
            passage = passages[index]
            question_id, rank = chosen[index]
            confidence, corroborating = self.rate(passage.source.id, passage.terms, rank, passages)
            number = int(passage.source.id.removeprefix("src-"))
            facts.append(
                Fact(
                    id=f"claim-{number}{passage.sentence.index + 1:03d}",
                    source_id=passage.source.id,
                    quote=passage.sentence.text,
                    span=Span(start=passage.sentence.start, end=passage.sentence.end),
                    confidence=confidence,
                    corroborating_source_ids=corroborating,
                    question_id=question_id,
                    provenance=step.provenance(),
                )
            )
        return facts

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

    def _notes(
        self,
        task: TaskSpec,
        questions: list[Question],
        ranked: dict[str, list[tuple[int, float]]],
        passages: list[Passage],
    ) -> str:
        lines = [f"# Research notes: {task.objective}", ""]
        for question in questions:
            lines += [f"## {question.id}: {question.text}", ""]
            hits = ranked[question.id]
            if not hits:
                lines += ["No relevant passage found.", ""]
            for rank, (index, score) in enumerate(hits, start=1):
                passage = passages[index]
                lines.append(
                    f"{rank}. [{passage.source.id}, chars {passage.sentence.start}-"
                    f"{passage.sentence.end}, score {score:.3f}] {passage.sentence.text}"
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
