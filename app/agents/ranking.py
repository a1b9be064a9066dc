"""Ranking passages per question and per required section: BM25, then the relevance rule.

BM25 finds the candidates; only those that address a question (``app/text/relevance.py``)
are kept for it, best answer first, so widening finds more but never answers what the
corpus does not.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field

import bm25s
import numpy as np

from app.agents.passages import Passage
from app.text.answer_types import asked_type, defined, holds
from app.text.key_terms import query_keys
from app.text.relevance import Rarity, on_topic
from contracts import Question

SUPPORT_POOL = 100
"""The objective's candidates (best by coverage, then BM25) that support reorders."""
Ranked = dict[str, list[tuple[int, float]]]
"""Per question id (or section title): passage indexes with BM25 scores, best first."""


@dataclass
class CorpusIndex:
    """BM25 over the usable passages research read; what ``search_corpus`` searches.

    A sentence is indexed with its section headings (widened, with its document's context
    too); ``addressing`` keeps only the candidates that address the query.
    """

    passages: list[Passage]
    rarity: Rarity
    min_shared_terms: int
    widen: bool = False
    kept: InitVar[tuple[list[int], bm25s.BM25 | None] | None] = None
    """The usable passages and their BM25 index as kept for this corpus
    (``app/agents/kept_index.py``); None works them out."""
    usable: list[int] = field(init=False)
    retriever: bm25s.BM25 | None = field(init=False, default=None)
    _documents: dict[str, set[str]] = field(init=False, default_factory=dict, repr=False)
    """Each document's key terms, gathered on first need (``_named``)."""

    def __post_init__(self, kept: tuple[list[int], bm25s.BM25 | None] | None) -> None:
        if kept is not None:
            self.usable, self.retriever = kept
            return
        self.usable = [index for index, passage in enumerate(self.passages) if passage.usable]
        if self.usable:
            self.retriever = bm25s.BM25()
            self.retriever.index(
                [sorted(self.indexed(at)) or ["\x00"] for at in self.usable], show_progress=False
            )

    def indexed(self, index: int) -> frozenset[str]:
        """The terms a passage is indexed under: its own and its headings'.

        Widened, its context, which holds those and its document title's.
        """
        passage = self.passages[index]
        return passage.context if self.widen else passage.terms | passage.headings

    def _named(self, source_id: str) -> frozenset[str]:
        """Every key term of one document's passages (their sentences, headings, title)."""
        if not self._documents:
            for passage in self.passages:
                self._documents.setdefault(passage.source.id, set()).update(passage.context)
        return frozenset(self._documents.get(source_id, ()))

    def best(
        self, query: frozenset[str], topic: frozenset[str] = frozenset()
    ) -> list[tuple[int, float, frozenset[str]]]:
        """Every passage BM25 scores above zero for ``query``: (index, score, its terms)."""
        return [
            (index, round(score, 6), self.indexed(index))
            for index, score in zip(*self._scored(query, topic), strict=True)
        ]

    def _scored(
        self, query: frozenset[str], topic: frozenset[str] = frozenset()
    ) -> tuple[list[int], list[float]]:
        """The passages BM25 scores above zero, best first (then in order), and the scores."""
        if self.retriever is None:
            return [], []
        scores = np.asarray(self.retriever.get_scores(sorted(query)))
        if topic:  # among sentences on the query's topic, those about the topic first
            boost = np.asarray(self.retriever.get_scores(sorted(topic)))
            scores = scores * (1 + boost / max(float(boost.max()), 1e-9))
        scored = np.flatnonzero(scores > 0)
        order = scored[np.lexsort((scored, -scores[scored]))]
        return np.asarray(self.usable)[order].tolist(), scores[order].tolist()

    def addressing(self, text: str, limit: int, *, together: bool) -> list[tuple[int, float]]:
        """The passages that address ``text``, best answer first (by coverage, then BM25).

        A question asking for a number, a date, a person or a place is addressed only by a
        sentence holding one (``app/text/answer_types.py``).

        ``together``: when no single sentence addresses it, the few sentences of one source
        that address it together.
        """
        query = query_keys(text)
        if not query:
            return []
        kind = asked_type(text)  # a number, a year, a person…: only a sentence holding one,
        subject = self.rarity.rarest(query) if kind else []  # about what was asked
        needed = 1 if self.widen else min(self.min_shared_terms, len(query))
        judged: dict[frozenset[str], tuple[float, bool]] = {}
        addressing = []
        for index, score in zip(*self._scored(query), strict=True):  # no tuple per candidate
            if len(self.indexed(index) & query) < needed:
                continue
            passage = self.passages[index]
            shared = passage.context & query  # all the rule looks at
            named = self._named(passage.source.id) & query if kind else frozenset()
            verdict = judged.get(shared | named)
            if verdict is None:
                coverage = round(self.rarity.coverage(query, shared), 2)
                verdict = judged[shared | named] = (
                    coverage,
                    self.rarity.addresses(query, shared, named),
                )
            typed = all(unit & passage.context for unit in subject)
            if verdict[1] and typed and holds(kind, passage.sentence.plain, text):
                addressing.append((verdict[0], round(score, 6), index))
        addressing.sort(key=lambda item: (-item[0], -item[1], item[2]))  # best answer first
        if together and not kind:  # a topic to explain: what the other answers also say
            addressing = self._supported(query, addressing)
        hits = [(index, score) for _, score, index in addressing[:limit]]
        if together and not hits:
            found = _together(query, self.best(query), self.passages, self.rarity)
            typed = any(holds(kind, self.passages[at].sentence.plain, text) for at, _ in found)
            hits = found if typed else []
        if together and hits and not kind:  # a topic to explain: what its subject is first
            defining = self.defining(self.rarity.titled & query)
            hits = [*defining, *(hit for hit in hits if hit not in defining)][:limit]
        return hits

    def _supported(
        self, query: frozenset[str], ranked: list[tuple[float, float, int]]
    ) -> list[tuple[float, float, int]]:
        """The objective's best candidates reordered by coverage times support.

        Where every document is about the objective's subject, nearly every sentence shares
        its terms ("In 2022, the bicentenary of the decipherment, a petition … called for
        the return of the Rosetta Stone" names as much of "how the Rosetta Stone led to
        the decipherment" as any). What tells an explanation from an aside is the rest
        of the sentence: an answer's other terms (the Demotic, the Greek, the cartouches)
        recur in the other answers found in other sections, an aside's (a petition, a
        return) do not. A sentence's support is its similarity to the other candidates
        outside its own section (cosine over its key terms not in the objective, each
        weighed by its rarity), each weighed by that candidate's coverage; the first
        ``SUPPORT_POOL`` candidates are reordered, the rest follow as they were.
        """
        pool, rest = ranked[:SUPPORT_POOL], ranked[SUPPORT_POOL:]
        weight = self.rarity.weight
        own = [self.passages[index].terms - query for *_, index in pool]
        norms = [math.sqrt(sum(weight(key) ** 2 for key in terms)) or 1.0 for terms in own]
        sections = [self.passages[index].sentence.section for *_, index in pool]
        support = [0.0] * len(pool)
        for a in range(len(pool)):
            for b in range(a + 1, len(pool)):
                shared = own[a] & own[b]
                if not shared or sections[a] == sections[b]:
                    continue
                similarity = sum(weight(key) ** 2 for key in shared) / (norms[a] * norms[b])
                support[a] += similarity * pool[b][0]
                support[b] += similarity * pool[a][0]
        order = sorted(
            range(len(pool)),
            key=lambda at: (-round(pool[at][0] * support[at], 6), -pool[at][0], -pool[at][1], at),
        )
        return [pool[at] for at in order] + rest

    def defining(self, subject: frozenset[str]) -> list[tuple[int, float]]:
        """The first passage saying what ``subject`` is ("quern is a small log shipper: …").

        ``subject``: the objective's terms that title documents. An article explaining a
        subject tells what it is: the objective is addressed by its subject's definition,
        once the objective is addressed at all.
        """
        if not subject:
            return []
        found = []
        for index in self.usable:
            named = defined(self.passages[index].sentence.plain)
            if named and named <= subject:
                found.append((index, 0.0))
        return found[:1]


def rank_passages(
    questions: list[Question],
    sections: list[str],
    index: CorpusIndex,
    *,
    per_query: int,
    searched: Ranked | None = None,
) -> tuple[Ranked, Ranked]:
    """Per question, the passages that address it; per section, those on its topic.

    BM25 finds the candidates (a sentence with its section headings; widened, with its
    document title too); those that address a question are ordered by how much of it
    they cover, then by BM25. A first pass also asks a sentence to share two of a question's
    terms; the widened pass asks one. Neither pass admits a sentence that does not
    address the question (``app/text/relevance.py``): widening finds more, never answers
    what the corpus does not. ``per_query`` candidates at most are kept for each; the
    objective (the first question) may be addressed by sentences of one source together.
    ``searched``: rankings already found for some questions (through ``search_corpus``).
    """
    ranked: Ranked = {question.id: [] for question in questions}
    by_section: Ranked = {title: [] for title in sections}
    if index.retriever is None:
        return ranked, by_section
    for position, question in enumerate(questions):
        if searched is not None and question.id in searched:
            ranked[question.id] = searched[question.id]
            continue
        ranked[question.id] = index.addressing(question.text, per_query, together=position == 0)
    topic = query_keys(questions[0].text) if questions else frozenset()
    anchors = index.rarity.anchors(topic)
    about = {passage.source.id for passage in index.passages if anchors & passage.context}
    for title in sections:  # on the title's topic, from documents about the objective
        for at, score, _ in index.best(query_keys(title), topic):
            if len(by_section[title]) >= per_query:
                break
            source = index.passages[at].source.id
            if on_topic(title, index.passages[at].context) and (not anchors or source in about):
                by_section[title].append((at, score))
    return ranked, by_section


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
