"""Offline Writer: an article built only from sourced facts, every sentence cited."""

from __future__ import annotations

from dataclasses import dataclass

from app.text import FULL_STOPS, join_sentences, strip_citations, terms, word_count
from app.text import cite as cite_claim
from contracts import (
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    Fact,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    Usage,
)
from graphs import AgentOutput, WriteRequest

DEFAULT_MAX_WORDS = 600
"""Length the offline writer aims for when the task sets no limit."""


def cite(fact: Fact) -> str:
    """The fact's claim as a sentence ending in its citation marker."""
    return cite_claim(fact.statement, fact.id)


def addressed_changes(review: ReviewResult | None) -> list[str]:
    """The review's required changes as ``CODE:claim-or-section`` entries for the draft."""
    return [
        f"{change.code.value}:{change.claim_id or change.section or '-'}"
        for change in (review.required_changes if review else [])
    ]


@dataclass
class OfflineWriterAgent:
    """Deterministic writer: same facts, constraints and review, same bytes."""

    default_max_words: int = DEFAULT_MAX_WORDS

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        """Draft round N+1: leave out rejected claims, fit the limits, cover the sections."""
        task, bundle, store, step = request.task, request.bundle, request.store, request.step
        previous, review = request.previous, request.review
        excluded = set(previous.excluded_claim_ids if previous else [])
        if review is not None:
            excluded |= set(review.rejected_claims)
        usable = [fact for fact in bundle.facts if fact.id not in excluded]
        limit = task.constraints.max_words or self.default_max_words
        sections = self._sections(task, bundle, usable)
        body, cited = self._compose(task, sections, limit)
        ref = store.put(step.artifact_id("draft"), "draft", body.encode(), "text/markdown")
        step.fault("after_artifact")
        addressed = addressed_changes(review)
        errors = [] if cited or not usable else [self._nothing_fits(usable, limit)]
        draft = DraftArticle(
            task_id=task.task_id,
            result_status="completed" if cited else "failed",
            revision=(previous.revision + 1) if previous else 1,
            body=ref,
            cited_claim_ids=cited,
            excluded_claim_ids=sorted(excluded),
            addressed_changes=addressed,
            word_count=word_count(body),
            errors=errors,
        )
        return AgentOutput(draft, usage=Usage())

    @staticmethod
    def _nothing_fits(usable: list[Fact], limit: int) -> ErrorDetail:
        """Why no draft can be written: the word limit is below every cited sentence.

        Another round cannot help (the limit and the facts stay the same), so the run ends
        with this reason instead of reviewing empty drafts until the rounds are spent.
        """
        shortest = min(word_count(cite(fact)) for fact in usable)
        return ErrorDetail(
            code=ErrorCode.CONSTRAINT_VIOLATED,
            detail=f"no cited sentence fits in {limit} words: the shortest of "
            f"{len(usable)} usable facts needs {shortest}; allow at least {shortest} words",
            field="constraints.max_words",
        )

    def _sections(
        self, task: TaskSpec, bundle: ResearchBundle, facts: list[Fact]
    ) -> list[tuple[str, list[Fact]]]:
        """Required sections get the facts closest to their titles; else one per source."""
        required = task.constraints.required_sections
        if not required:
            grouped: dict[str, list[Fact]] = {}
            for fact in facts:
                source = bundle.source(fact.source_id)
                title = source.title if source else fact.source_id
                grouped.setdefault(title, []).append(fact)
            return list(grouped.items())
        buckets: list[tuple[str, list[Fact]]] = [(title, []) for title in required]
        title_terms = [set(terms(title)) for title in required]
        for position, fact in enumerate(facts):
            fact_terms = set(terms(fact.statement))
            overlaps = [len(fact_terms & words) for words in title_terms]
            best = max(overlaps)
            target = overlaps.index(best) if best > 0 else position % len(required)
            buckets[target][1].append(fact)
        return buckets

    def _compose(
        self, task: TaskSpec, sections: list[tuple[str, list[Fact]]], limit: int
    ) -> tuple[str, list[str]]:
        """Take facts in rank order, round-robin over sections, until the word limit."""
        chosen: dict[str, list[Fact]] = {title: [] for title, _ in sections}
        used = 0
        depth = max((len(facts) for _, facts in sections), default=0)
        for position in range(depth):
            for title, facts in sections:
                if position >= len(facts):
                    continue
                sentence = cite(facts[position])
                words = word_count(sentence)
                if used + words > limit:
                    continue
                chosen[title].append(facts[position])
                used += words
        lines = [f"# {strip_citations(task.objective).rstrip('.?!' + FULL_STOPS)}", ""]
        cited: list[str] = []
        for title, _ in sections:
            lines += [f"## {title}", ""]
            facts = sorted(chosen[title], key=_reading_order)
            if facts:
                lines += [join_sentences([cite(fact) for fact in facts]), ""]
            cited += [fact.id for fact in facts]
        return "\n".join(lines).rstrip() + "\n", cited


def _reading_order(fact: Fact) -> tuple[int, int]:
    return int(fact.source_id.removeprefix("src-")), fact.span.start
