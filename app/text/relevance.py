"""When a sentence addresses a question or a section title: one rule for every agent.

Research, the writer and the reviewer share it, so what research calls answered the
reviewer can check. Key terms (stems, and Chinese or Japanese character pairs) are those
of ``app/text/key_terms.py``.

**Answerability.** A question's key terms are weighted by how rare they are in the corpus
(inverse sentence frequency: ``ln(1 + N / (1 + df))`` over the N prose sentences read; a
term the corpus never uses weighs as much as one it uses once). A sentence
*addresses* the question when the terms it shares with the question, counting those of its
section headings and document title as its own, carry at least ``ANSWER_COVERAGE`` of the
question's weight. So "What did von Frisch eat for lunch?" is not answered by a sentence
about von Frisch: "eat" and "lunch" carry most of the question's weight and no sentence
has them. The sentence must also name what the question is about, or stand in a document
that does: the question's term that titles a document and is found in the fewest ("Typer"
in "how Typer builds command line interfaces"), so a sentence about another tool's command
line does not answer it. A question no
sentence addresses stays open.

**The kind of answer asked** (a number, a year, a person, a place:
``app/text/answer_types.py``) is checked where research ranks what addresses a question
(``app/agents/ranking.py``), with the question's rarest terms (``Rarity.rarest``).

**The objective** is a topic to explain rather than a question with one answer: it is
also addressed when up to ``TOGETHER`` sentences of one document together carry that share
(sentences of different documents never add up: "colour" in one note and "drones" in
another do not tell the colour of drones).

**Section relevance.** A sentence is on topic for a section when it, or its section path,
shares a key term with the section's title.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.text.key_terms import heading_keys, keys, query_keys
from contracts import Fact, ResearchBundle

ANSWER_COVERAGE = 0.5
"""Share of a question's weight a sentence (with its headings) must carry to address it."""
TOGETHER = 3
"""Sentences of one document that may address the objective together."""


@dataclass(frozen=True)
class Rarity:
    """How rare each key term is among the corpus' prose sentences.

    It also counts the documents (text, headings and title) each term appears in at all.
    """

    sentences: int
    frequency: Counter[str]
    documents: Counter[str] = field(default_factory=Counter)
    titled: frozenset[str] = frozenset()
    """Key terms of the documents' titles: the topics the corpus is about."""
    postings: dict[str, frozenset[int]] = field(default_factory=dict)
    """The sentences (by position) each key term appears in."""
    document_count: int = 0
    """How many documents were read."""
    _units: dict[frozenset[str], list[frozenset[str]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """``units`` of each question asked, worked out once: research asks it of every
    sentence, and grouping compares postings as large as the corpus."""
    _weighed: dict[frozenset[str], list[tuple[float, frozenset[str]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Each question's units with their weights, for ``coverage``."""

    @classmethod
    def of(
        cls,
        sentence_keys: Iterable[frozenset[str]],
        document_keys: Iterable[frozenset[str]] = (),
        titles: Iterable[frozenset[str]] = (),
    ) -> Rarity:
        """Rarity over these sentences' key terms and these documents' (all their terms)."""
        frequency: Counter[str] = Counter()
        postings: dict[str, set[int]] = {}
        count = 0
        for found in sentence_keys:
            frequency.update(found)
            for key in found:
                postings.setdefault(key, set()).add(count)
            count += 1
        documents: Counter[str] = Counter()
        for found in document_keys:
            documents.update(found)
        frozen = {key: frozenset(where) for key, where in postings.items()}
        titled = list(titles)
        return cls(count, frequency, documents, frozenset().union(*titled), frozen, len(titled))

    def units(self, question: frozenset[str]) -> list[frozenset[str]]:
        """The question's terms, those that always occur together counted as one.

        "von" and "Frisch" name one person; counted twice, a name would outweigh what is
        asked about it ("What was the name of von Frisch's wife?"). Terms found in exactly
        the same sentences are one unit; a term the corpus never uses is its own.
        """
        known = self._units.get(question)
        if known is None:
            known = self._units[question] = self._grouped(question)
        return list(known)

    def _grouped(self, question: frozenset[str]) -> list[frozenset[str]]:
        grouped: dict[frozenset[int], set[str]] = {}
        units: list[frozenset[str]] = []
        for key in sorted(question):
            where = self.postings.get(key)
            if where:
                grouped.setdefault(where, set()).add(key)
            else:
                units.append(frozenset({key}))
        return units + [frozenset(keys) for keys in grouped.values()]

    def anchors(self, question: frozenset[str]) -> frozenset[str]:
        """What the question is about: its title terms found in the fewest documents.

        Of the question's terms that title a document, those in the fewest documents:
        "Describe how Typer builds command line interfaces" is about Typer, which titles one
        document, not about "command line", which many use. A question naming no title's
        term has no anchor.
        """
        present = {
            key: self.documents[key] for key in question & self.titled if self.documents.get(key)
        }
        if not present:
            return frozenset()
        fewest = min(present.values())
        return frozenset(key for key, count in present.items() if count == fewest)

    def rarest(self, question: frozenset[str]) -> list[frozenset[str]]:
        """The question's most specific terms the corpus uses: its rarest units, all tied.

        What a typed answer must be about: a year in a sentence without "Fabriano" is not
        the year of Fabriano's first workshop. Empty when the corpus uses none of its terms.
        """
        seen = {
            unit: min(self.frequency[key] for key in unit if self.frequency[key])
            for unit in self.units(question)
            if any(self.frequency[key] for key in unit)
        }
        fewest = min(seen.values(), default=0)
        return [unit for unit, count in seen.items() if count == fewest]

    def weight(self, key: str) -> float:
        """Inverse sentence frequency; an unseen term weighs as a term seen once."""
        seen = max(1, self.frequency.get(key, 0))
        return math.log(1 + self.sentences / (1 + seen))

    def coverage(self, question: frozenset[str], context: frozenset[str]) -> float:
        """Share of the question's weight that the context's terms carry (0 when empty).

        Each unit of terms that always occur together (``units``) weighs as its rarest.
        """
        units = self._weighed.get(question)
        if units is None:
            units = self._weighed[question] = [
                (max(self.weight(key) for key in unit), unit) for unit in self.units(question)
            ]
        weighed = [(weight, bool(unit & context)) for weight, unit in units]
        total = sum(weight for weight, _ in weighed)
        if total <= 0:
            return 0.0
        return sum(weight for weight, covered in weighed if covered) / total

    def addresses(
        self,
        question: frozenset[str],
        context: frozenset[str],
        document: frozenset[str] = frozenset(),
    ) -> bool:
        """Whether a sentence with this context (its terms and its headings') addresses it.

        It must carry enough of the question's weight, and name what the question is about.
        What every document of the corpus names tells no document apart: a sentence of a
        document that names it too (``document``: the key terms of its sentences, headings
        and title) need not repeat it. So on every page of the kestrel manual, "A new bucket
        allows 60 requests per minute" is about kestrel; where other documents are about
        other tools, a sentence must name its own.
        """
        if not question or self.coverage(question, context) < ANSWER_COVERAGE:
            return False
        anchors = self.anchors(question)
        everywhere = {
            key for key in anchors & document if self.documents[key] >= self.document_count > 1
        }
        return not anchors or bool(anchors & context) or bool(everywhere)

    def together(self, question: frozenset[str], contexts: list[frozenset[str]]) -> list[int]:
        """The few sentences (indexes into ``contexts``) that address it together, or none.

        The best ``TOGETHER`` by their own coverage; they address it when the union of
        their terms carries ``ANSWER_COVERAGE`` of its weight and each adds a term.
        """
        order = sorted(
            range(len(contexts)), key=lambda at: (-self.coverage(question, contexts[at]), at)
        )
        chosen: list[int] = []
        covered: frozenset[str] = frozenset()
        for at in order:
            adds = (contexts[at] & question) - covered
            if not adds:
                continue
            chosen.append(at)
            covered |= adds
            if len(chosen) == TOGETHER:
                break
        anchors = self.anchors(question)
        named = not anchors or bool(anchors & covered)
        if bool(question) and named and self.coverage(question, covered) >= ANSWER_COVERAGE:
            return chosen
        return []


def on_topic(title: str, context: frozenset[str]) -> bool:
    """Whether a sentence with this context (its terms and its headings') fits the title."""
    return bool(query_keys(title) & context)


def fact_context(fact: Fact, bundle: ResearchBundle) -> frozenset[str]:
    """A fact's key terms with those of its section path and its source's title."""
    source = bundle.source(fact.source_id)
    return keys(fact.statement) | heading_keys(fact.section, source.title if source else None)


def unrelated(
    claims: Iterable[str],
    bundle: ResearchBundle,
    questions: Iterable[str],
    sections: dict[str, str | None],
) -> list[str]:
    """The claims relevant to no question and to no required section they stand under.

    A fact is relevant to a question when its statement or quote, its section path or its
    document's title shares a key term with it (a document is about its title: under
    "The waggle dance", "Foragers run a figure of eight on the comb" describes the dance).
    Under a required section (``sections``: claim id to the required title it stands
    under, or None), a fact on that section's topic is relevant.
    A fact leaning on a relevant one, or leaned on by one, is relevant too: the two are
    read together. ``claims`` are those the article cites, in its order.
    """
    asked = [query_keys(question) for question in questions]
    facts = {claim: fact for claim in claims if (fact := bundle.fact(claim)) is not None}
    relevant = set()
    for claim, fact in facts.items():
        context = fact_context(fact, bundle) | keys(fact.quote)  # a model's claim rewords it
        title = sections.get(claim)
        if any(context & terms for terms in asked) or (
            title is not None and on_topic(title, context)
        ):
            relevant.add(claim)
    grown = True
    while grown:  # a chain of leaning facts is read as one
        joined = {
            claim
            for claim, fact in facts.items()
            if claim not in relevant
            and (
                fact.leans_on in relevant
                or any(other.leans_on == claim for c, other in facts.items() if c in relevant)
            )
        }
        relevant |= joined
        grown = bool(joined)
    return [claim for claim in facts if claim not in relevant]


ON_TOPIC_SHARE = 0.5
"""Share of a required section's cited sentences that must cite a fact on its topic."""


def off_topic(title: str, sentences: list[list[str]], bundle: ResearchBundle) -> tuple[int, bool]:
    """How many of a section's sentences cite a fact on its topic, and whether too few.

    ``sentences`` holds each sentence's cited claim ids.
    """
    on = sum(
        any(
            (fact := bundle.fact(claim_id)) is not None
            and on_topic(title, fact_context(fact, bundle))
            for claim_id in ids
        )
        for ids in sentences
    )
    return on, on < ON_TOPIC_SHARE * len(sentences)
