"""Model-backed Research: deterministic retrieval, model-proposed claims, verified quotes.

Retrieval is the offline agent's (corpus reading within the tool-call budget, BM25 per
question). The model sees the top passages, may search for more through the node's
``search_corpus`` tool (``app/agents/tool_talk.py``), and proposes claims with a source id
and a quote. A claim becomes a Fact only when its quote is found verbatim in a passage of
that source shown to the model or returned by its searches (whitespace runs may differ;
the Fact keeps the exact source text and span) and the claim's content terms are at least
half covered by its quote. Every other claim is dropped and recorded in the bundle's
errors, never turned into a fact. A quote from a sentence that introduces a code example
carries that example (``Fact.example``), however much of the sentence it quotes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.agents import prompt_inputs, prompts, replies
from app.agents.citation_checks import SUPPORT_OVERLAP
from app.agents.passages import Passage, Retrieval, example_of
from app.agents.research import OfflineResearchAgent
from app.agents.structured import ModelBacked
from app.corpus.reading import CorpusNotFound
from app.text.primitives import terms
from contracts import (
    ErrorCode,
    ErrorDetail,
    Fact,
    ResearchBundle,
    SearchCorpusOutput,
    Span,
    TaskSpec,
    Usage,
)
from graphs import AgentOutput, ResearchRequest, StepInfo
from graphs.tools import ToolFn, ToolResult

MAX_PASSAGES = 16
"""Passages shown to the model, taken round-robin over the questions' rankings."""


@dataclass(frozen=True)
class Shown:
    """A passage shown to the model, with the question and rank it was retrieved for."""

    passage: Passage
    question_id: str | None
    """The question it was retrieved for; None for a required section's topic."""
    rank: int


@dataclass
class LLMResearchAgent(ModelBacked):
    """Research whose claims a model proposes and deterministic checks admit."""

    retrieval: OfflineResearchAgent
    max_passages: int = MAX_PASSAGES

    def tool(self, name: str) -> ToolFn | None:
        """The code of the tools its retrieval reads with."""
        return self.retrieval.tool(name)

    def fingerprint(self, task: TaskSpec) -> str:
        """The corpus fingerprint of the retrieval it wraps."""
        return self.retrieval.fingerprint(task)

    def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
        """Retrieve, ask the model for claims, keep the verified ones as facts."""
        task, store, step = request.task, request.store, request.step
        try:
            found = self.retrieval.retrieve(request)
        except CorpusNotFound as error:
            return AgentOutput(self.retrieval.missing_corpus(task, error))
        shown = self._shown(found)
        usage = Usage(tool_calls=found.tool_calls)
        if not shown:  # nothing relevant was retrieved: no model call, nothing to claim
            bundle = self.retrieval.bundle(task, found, [], list(found.questions), store, step)
            return AgentOutput(bundle, usage=usage, receipts=found.receipts)
        excerpts = [
            prompts.Excerpt(item.passage.source.id, item.passage.sentence.text) for item in shown
        ]
        prompt = prompts.research_prompt(
            task,
            found.questions,
            excerpts,
            max_claims=self.retrieval.max_facts,
            inputs=prompt_inputs.request_inputs(request, prompt_inputs.RESEARCH_LAYS_OUT),
        )
        reply = self.ask_model(prompt, replies.ResearchReply, step, "research", request.tools)
        shown = _with_found(shown, reply.consulted, found)
        facts, errors, log = self._admit(reply.value.claims, shown, found, step)
        answered = {question_id for fact in facts for question_id in fact.answers}
        open_questions = [question for question in found.questions if question.id not in answered]
        bundle = self.retrieval.bundle(
            task, found, facts, open_questions, store, step, errors=errors, notes=log
        )
        usage = usage.model_copy(update={"tokens": reply.tokens})
        return AgentOutput(bundle, usage=usage, receipts=found.receipts)

    def _shown(self, found: Retrieval) -> list[Shown]:
        """The best passages, round-robin over questions, in reading order."""
        chosen: dict[int, Shown] = {}
        queries: list[tuple[str | None, list[tuple[int, float]]]] = [
            *found.ranked.items(),
            *((None, hits) for hits in found.sections.values()),
        ]
        depth = max((len(hits) for _, hits in queries), default=0)
        for rank in range(depth):
            for question_id, hits in queries:
                if rank < len(hits) and len(chosen) < self.max_passages:
                    index = hits[rank][0]
                    if index not in chosen:
                        chosen[index] = Shown(found.passages[index], question_id, rank)
        return sorted(
            chosen.values(),
            key=lambda item: (
                int(item.passage.source.id.removeprefix("src-")),
                item.passage.sentence.start,
            ),
        )

    def _admit(
        self,
        claims: list[replies.ProposedClaim],
        shown: list[Shown],
        found: Retrieval,
        step: StepInfo,
    ) -> tuple[list[Fact], list[ErrorDetail], str]:
        facts: list[Fact] = []
        errors: list[ErrorDetail] = []
        log = ["", "## Claims proposed by the model", ""]
        seen: set[tuple[str, int, int]] = set()
        for number, proposed in enumerate(claims, start=1):
            if len(facts) >= self.retrieval.max_facts:
                log.append(f"{number}. not considered: {self.retrieval.max_facts} facts kept")
                continue
            located = _locate(proposed, shown)
            if located is None:
                detail = (
                    f"proposed claim {number} dropped: its quote is not found verbatim in the "
                    f"passages of {proposed.source_id}: {proposed.quote[:300]!r}"
                )
                errors.append(
                    ErrorDetail(
                        code=ErrorCode.QUOTE_NOT_FOUND,
                        source_id=proposed.source_id,
                        detail=detail,
                    )
                )
                log.append(f"{number}. dropped (quote not found): {proposed.claim[:200]}")
                continue
            item, start, end = located
            source_id = item.passage.source.id
            questions = found.answering(item.passage)
            quote = found.texts[source_id][start:end]
            claim_terms = set(terms(proposed.claim))
            quote_terms = frozenset(terms(quote))
            support = len(claim_terms & quote_terms) / len(claim_terms) if claim_terms else 0.0
            if support < SUPPORT_OVERLAP:
                errors.append(
                    ErrorDetail(
                        code=ErrorCode.UNSUPPORTED_SENTENCE,
                        source_id=source_id,
                        detail=f"proposed claim {number} dropped: it says more than its quote "
                        f"({support:.0%} of its terms are in the quote): {proposed.claim[:300]!r}",
                    )
                )
                log.append(f"{number}. dropped (unsupported by its quote): {proposed.claim[:200]}")
                continue
            if (source_id, start, end) in seen:
                log.append(f"{number}. skipped: same quote as an earlier claim")
                continue
            seen.add((source_id, start, end))
            confidence, corroborating = self.retrieval.rate(
                source_id, quote_terms, item.rank, found.passages
            )
            fact = Fact(
                id=f"claim-{len(facts) + 1}",
                claim=None if proposed.claim.strip() == quote.strip() else proposed.claim,
                source_id=source_id,
                quote=quote,
                span=Span(start=start, end=end),
                confidence=confidence,
                corroborating_source_ids=corroborating,
                question_id=questions[0] if questions else None,
                also_answers=questions[1:],
                section=list(item.passage.sentence.section)[-12:],
                lines=item.passage.lines,
                example=example_of(item.passage, found.texts[source_id]),
                provenance=step.provenance(),
            )
            facts.append(fact)
            log.append(f"{number}. kept as {fact.id} [{source_id}, chars {start}-{end}]")
        return facts, errors, "\n".join(log) + "\n"


def _locate(proposed: replies.ProposedClaim, shown: list[Shown]) -> tuple[Shown, int, int] | None:
    """Where the quote sits in a shown passage of its source: (passage, start, end)."""
    words = proposed.quote.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words))
    for item in shown:
        if item.passage.source.id != proposed.source_id:
            continue
        match = pattern.search(item.passage.sentence.text)
        if match:
            offset = item.passage.sentence.start
            return item, offset + match.start(), offset + match.end()
    return None


def _with_found(shown: list[Shown], consulted: list[ToolResult], found: Retrieval) -> list[Shown]:
    """The passages shown, then those the model's own searches returned (in its order)."""
    where = {(passage.source.id, passage.sentence.start): passage for passage in found.passages}
    seen = {(item.passage.source.id, item.passage.sentence.start) for item in shown}
    more: list[Shown] = []
    for result in consulted:
        if not isinstance(result.output, SearchCorpusOutput):
            continue
        for rank, hit in enumerate(result.output.hits):
            key = (hit.source_id, hit.start)
            if key not in seen and key in where:
                seen.add(key)
                more.append(Shown(where[key], None, rank))
    return [*shown, *more]
