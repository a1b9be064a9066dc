"""Ranking passages per question and per required section: BM25, then the relevance rule.

BM25 finds the candidates; only those that address a question (``app/text/relevance.py``)
are kept for it, best answer first, so widening finds more but never answers what the
corpus does not.
"""

from __future__ import annotations

import bm25s
import numpy as np

from app.agents.passages import Passage
from app.text.key_terms import query_keys
from app.text.relevance import Rarity, on_topic
from contracts import Question

Ranked = dict[str, list[tuple[int, float]]]
"""Per question id (or section title): passage indexes with BM25 scores, best first."""


def rank_passages(
    questions: list[Question],
    sections: list[str],
    passages: list[Passage],
    rarity: Rarity,
    *,
    per_query: int,
    min_shared_terms: int,
    widen: bool = False,
) -> tuple[Ranked, Ranked]:
    """Per question, the passages that address it; per section, those on its topic.

    BM25 finds the candidates (a sentence with its section headings; widened, with its
    document title too); those that address a question are ordered by how much of it
    they cover, then by BM25. A first pass also asks a sentence to share two of a question's
    terms; the widened pass asks one. Neither pass admits a sentence that does not
    address the question (``app/text/relevance.py``): widening finds more, never answers
    what the corpus does not. ``per_query`` candidates at most are kept for each.
    """
    ranked: dict[str, list[tuple[int, float]]] = {question.id: [] for question in questions}
    by_section: dict[str, list[tuple[int, float]]] = {title: [] for title in sections}
    usable = [index for index, passage in enumerate(passages) if passage.usable]
    if not usable:
        return ranked, by_section
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
            (usable[at], round(float(scores[at]), 6), indexed[at]) for at in order if scores[at] > 0
        ]

    for position, question in enumerate(questions):
        query = query_keys(question.text)
        if not query:
            continue
        needed = 1 if widen else min(min_shared_terms, len(query))
        candidates = best(query)
        addressing = [
            (round(rarity.coverage(query, passages[index].context), 2), score, index)
            for index, score, found in candidates
            if len(found & query) >= needed and rarity.addresses(query, passages[index].context)
        ]
        addressing.sort(key=lambda item: (-item[0], -item[1], item[2]))  # best answer first
        ranked[question.id] = [(index, score) for _, score, index in addressing[:per_query]]
        if position == 0 and not ranked[question.id]:
            ranked[question.id] = _together(query, candidates, passages, rarity)
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
