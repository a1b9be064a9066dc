"""Offline Writer: an article for a reader, built only from sourced facts, every sentence cited.

Only facts relevant to a question or a required section are written: an aside is left out
however much room is left. Required sections get the facts on their topic
(``app/text/relevance.py``), best first; each answered question gets at least one of its
facts; a fact that leans on an earlier sentence comes right after it (never opening a
paragraph); a fact introducing a code example is shown with it, its code counted in the
words (``app/agents/article_text.py``); the word limit is counted with the Reviewer's own
count; the draft ends with its Open questions and Sources (``app/agents/apparatus.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from app.agents.apparatus import open_questions
from app.agents.article_text import draft_markdown, fenced
from app.text.answer_types import asked_type, asks_what, defined, holds
from app.text.documents.examples import INTRODUCING_ENDS
from app.text.key_terms import heading_keys, keys, query_keys
from app.text.primitives import FULL_STOPS, join_sentences, strip_citations, word_count
from app.text.primitives import cite as cite_claim
from app.text.relevance import Rarity, fact_context, unrelated
from contracts import (
    DraftArticle,
    ErrorCode,
    ErrorDetail,
    Fact,
    Question,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    Usage,
    research_questions,
)
from graphs import AgentOutput, WriteRequest
from graphs.markdown import apparatus_heading

DEFAULT_MAX_WORDS = 600
"""Length the offline writer aims for when the task sets no limit."""


def cite(fact: Fact) -> str:
    """The fact's claim as a sentence ending in its citation marker.

    A sentence introducing its code example keeps its colon, after the marker.
    """
    statement = strip_citations(fact.statement)
    if fact.example is None or not statement.endswith(INTRODUCING_ENDS):
        return cite_claim(fact.statement, fact.id)
    body, colon = statement[:-1].rstrip(), statement[-1]
    return f"{body} [{fact.id}]{colon}" if colon == ":" else f"{body}[{fact.id}]{colon}"


def written(fact: Fact) -> str:
    """The fact as the article shows it: its sentence, then its code example if it has one."""
    return f"{cite(fact)}\n\n{fenced(fact)}" if fact.example else cite(fact)


def writable(task: TaskSpec, bundle: ResearchBundle, excluded: set[str]) -> list[Fact]:
    """The facts any writer may use, offline or model-backed.

    Not excluded, nor leaning on one that is (it would lose its referent), and relevant
    to a question or a required section: never an aside, whatever room is left.
    """
    usable = _usable(bundle.facts, excluded)
    topics = [*task.research_questions(), *task.constraints.required_sections]
    aside = set(unrelated((fact.id for fact in usable), bundle, topics, {}))
    return [fact for fact in usable if fact.id not in aside]


def addressed_changes(review: ReviewResult | None) -> list[str]:
    """The review's required changes as ``CODE:claim-or-section`` entries for the draft."""
    return [
        f"{change.code.value}:{change.claim_id or change.section or '-'}"
        for change in (review.required_changes if review else [])
    ]


_CONFIDENCE_ORDER = {"high": 0, "medium": 1, "low": 2}
Group = tuple[str | None, list[Fact]]
"""A section of the article: its heading (None for the opening text) and facts, best first."""


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
        usable = writable(task, bundle, excluded)
        limit = task.constraints.max_words or self.default_max_words
        groups = self._sections(task, bundle, usable)
        body, cited = self._compose(task, bundle, groups, limit, open_questions(request))
        ref = store.put(step.artifact_id("draft"), "draft", body.encode(), "text/markdown")
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
        shortest = min(word_count(written(fact)) for fact in usable)
        return ErrorDetail(
            code=ErrorCode.CONSTRAINT_VIOLATED,
            detail=f"no cited sentence fits in {limit} words: the shortest of "
            f"{len(usable)} usable facts needs {shortest}; allow at least {shortest} words",
            field="constraints.max_words",
        )

    def _sections(self, task: TaskSpec, bundle: ResearchBundle, facts: list[Fact]) -> list[Group]:
        """Required sections get the facts on their topic, the rest opens the article.

        A fact goes to the required section whose title it matches best: the share of the
        title's key terms in the sentence itself, then in it with its own heading, then in
        its whole context (section path and document title). A fact on no section's topic
        is never put under one. Without required sections, each sub-question (q-2, …) gets
        a section of the facts answering it, titled by the question (``_by_question``).
        """
        required = [
            title for title in task.constraints.required_sections if not _is_apparatus(title)
        ]
        if not required:
            return _by_question(task, bundle, facts)
        title_keys = [query_keys(title) for title in required]
        opening: list[Fact] = []
        placed: list[list[tuple[tuple[float, ...], int, Fact]]] = [[] for _ in required]
        for position, fact in enumerate(facts):
            layers = _layers(fact, bundle)
            fits = [
                tuple(len(layer & wanted) / len(wanted) if wanted else 0.0 for layer in layers)
                for wanted in title_keys
            ]
            best = max(fits)
            if best[-1] <= 0:
                opening.append(fact)
                continue
            placed[fits.index(best)].append((tuple(-share for share in best), position, fact))
        groups: list[Group] = [(None, opening)] if opening else []
        for title, candidates in zip(required, placed, strict=True):
            groups.append((title, [fact for *_, fact in sorted(candidates)]))
        return groups

    def _compose(
        self,
        task: TaskSpec,
        bundle: ResearchBundle,
        groups: list[Group],
        limit: int,
        still_open: list[Question],
    ) -> tuple[str, list[str]]:
        """Choose facts within the word limit, then lay them out section by section.

        First each required section's best fact, then each answered question's most direct
        answer (one shown with a code example first, since a how-to's answer is its example;
        then the sentence holding most of what was asked, and of those, for "what is", the
        one that defines its subject; then the most confident; then the shortest), unless a
        fact as direct is in already; then the rest round-robin. A fact comes with the facts
        it leans on, and only if they all fit.
        """
        chosen: dict[str, str | None] = {}  # claim id -> its group's heading
        used = 0

        def take(fact: Fact, heading: str | None) -> bool:
            """Choose the fact (with what it leans on) if it fits; whether it is chosen."""
            nonlocal used
            whole = _chain(fact, bundle)
            if any(chosen.get(item.id, heading) != heading for item in whole):
                return False  # its antecedent sits in another section: it would open a paragraph
            chain = [item for item in whole if item.id not in chosen]
            words = sum(word_count(written(item)) for item in chain)
            if used + words > limit:
                return False
            for item in chain:
                chosen[item.id] = heading
            used += words
            return True

        required = set(task.constraints.required_sections)
        lead: str | None = None  # the objective's most direct answer, which opens the article
        for heading, facts in groups:  # each required section's best fact that fits
            for fact in facts if heading in required else []:
                if take(fact, heading):
                    break
        answered = {
            question_id for bundle_fact in bundle.facts for question_id in bundle_fact.answers
        }

        def covers(claim: str, question_id: str, wanted: str, best: Weakness) -> bool:
            """Whether a chosen fact answers the question as directly as its best answer."""
            fact = _fact(bundle, claim)
            return question_id in fact.answers and _weakness(fact, wanted, weight) <= best

        asked = {question.id: question.text for question in research_questions(task)}
        weight = _rarity(bundle.facts)
        for question_id in sorted(answered, key=_question_number):
            wanted = asked.get(question_id, "")
            candidates = sorted(
                (
                    (
                        fact.example is None,  # a how-to's answer is its example
                        _weakness(fact, wanted, weight),
                        _CONFIDENCE_ORDER[fact.confidence],
                        word_count(written(fact)),
                        index,
                        heading,
                    )
                    for heading, facts in groups
                    for index, fact in enumerate(facts)
                    if question_id in fact.answers
                ),
                key=lambda item: item[:5],
            )
            best = candidates[0][1] if candidates else NO_WEAKNESS
            for *_, index, heading in candidates:
                if any(covers(claim, question_id, wanted, best) for claim in chosen):
                    break
                group = next(facts for title, facts in groups if title == heading)
                take(group[index], heading)
            if question_id == "q-1":
                lead = next(
                    (claim for claim in chosen if covers(claim, question_id, wanted, best)), None
                )
        depth = max((len(facts) for _, facts in groups), default=0)
        for position in range(depth):
            for heading, facts in groups:
                if position < len(facts):
                    take(facts[position], heading)
        title = " ".join(strip_citations(task.objective).split())
        lines = [f"# {title.rstrip('.?!' + FULL_STOPS)}", ""]
        opening = _opening(lead, chosen, required, bundle)
        defining = next(  # asked what the subject is: the opening says it first
            (
                fact
                for fact in bundle.facts
                if chosen.get(fact.id, "\0") is None
                and fact.leans_on is None
                and _says_what(fact, task, weight)
            ),
            None,
        )
        if opening and defining is not None and defining not in opening:
            opening = [defining, *opening]
        topic = query_keys(task.objective)
        for paragraph in _paragraphs(opening, one=True):
            lines += [join_sentences([cite(fact) for fact in paragraph]), ""]
        last = opening[-1] if opening else None
        for heading, group in groups:
            placed = [
                fact
                for fact in bundle.facts
                if chosen.get(fact.id, "\0") == heading and fact not in opening
            ]
            first = next((fact for fact in group if fact in placed), None)
            start = last if heading is None else None
            facts = _sequence(placed, start, topic, weight, first=None if start else first)
            if heading is not None and (facts or heading in required):
                lines += [f"## {heading}", ""]  # no heading over nothing, unless required
            for paragraph in _paragraphs(facts):
                lines += [join_sentences([cite(fact) for fact in paragraph]), ""]
            last = facts[-1] if facts and heading is None else last
        return draft_markdown("\n".join(lines).rstrip() + "\n", bundle, still_open)


class Weakness(NamedTuple):
    """How far a fact's own sentence is from answering a question directly: least first."""

    wrong_kind: bool
    """The question asks for a number, a year, a person or a place the sentence lacks."""
    lacking: float
    """The share of the question's key terms it lacks, each weighed by its rarity."""
    undefined: bool
    """Asked what something is or does, the sentence does not say what it is."""


NO_WEAKNESS = Weakness(wrong_kind=False, lacking=0.0, undefined=True)
"""What a question with no key terms finds in any sentence."""


def _weakness(fact: Fact, question: str, weight: Callable[[str], float]) -> Weakness:
    """How far a fact's own sentence is from answering a question directly.

    First whether it holds the kind of answer asked, if one is ("Where does stackconf look
    for its TOML file?": a path or a place, ``app/text/answer_types.py``), then the share
    of the question's key terms it lacks, each weighed by how rare it is among the
    bundle's facts (``weight``), then, for a question asking what something is or does,
    whether it fails to define that subject. A sentence that restates the subject and a
    term or two ("stackconf needs Python") is a weaker answer than one holding what was
    asked ("… defaults to config.toml"); "killed" in "What happens to a task when the worker
    running it is killed?" weighs more than "task" and "worker", which every fact names; of
    two that hold as much, the one that says what the subject *is* ("A ferrule worker is a
    long-running process …") answers "what is" and "describe what" best.
    """
    wanted = query_keys(question)
    total = sum(weight(key) for key in wanted)
    if not total:
        return NO_WEAKNESS
    statement = strip_citations(fact.statement)
    kind = asked_type(question)
    held = sum(weight(key) for key in keys(statement) & wanted)
    lacking = round(1 - held / total, 2)
    named = defined(statement) if asks_what(question) else frozenset()
    return Weakness(
        wrong_kind=kind is not None and not holds(kind, statement, question),
        lacking=lacking,
        undefined=not (named and named <= wanted),
    )


def _rarity(facts: list[Fact]) -> Callable[[str], float]:
    """A key term's weight among these facts, as research weighs it among sentences."""
    return Rarity.of(keys(strip_citations(fact.statement)) for fact in facts).weight


def _opening(
    lead: str | None, chosen: dict[str, str | None], required: set[str], bundle: ResearchBundle
) -> list[Fact]:
    """The paragraph the article opens with: the objective's most direct answer.

    With the facts it leans on and those that lean on it, taken from the section they
    were chosen for, unless that would leave a required section with nothing.
    """
    if lead is None:
        return []
    chain = _chain(_fact(bundle, lead), bundle)
    heading = chosen.get(lead)
    rest = [claim for claim, under in chosen.items() if under == heading]
    if heading in required and len(rest) <= len(chain):
        return []
    ids = {fact.id for fact in chain}
    grown = True
    while grown:  # the sentences that refer back to it come along, or would lose it
        leaning = [
            claim for claim in chosen if claim not in ids and _fact(bundle, claim).leans_on in ids
        ]
        ids.update(leaning)
        grown = bool(leaning)
    if heading in required and len(rest) <= len(ids):
        return []
    return sorted((_fact(bundle, claim) for claim in ids), key=_reading_order)


def _by_question(task: TaskSpec, bundle: ResearchBundle, facts: list[Fact]) -> list[Group]:
    """Without required sections: the objective's part, then one per sub-question.

    Each sub-question's part is titled by the question. A fact answering a sub-question
    goes to the one it answers most directly (``_weakness``): the objective is the
    article's whole topic, a sub-question one part of it. One saying what the objective
    asks its subject is stays with the objective: "stackconf is a configuration loader …"
    answers "what stackconf is for", though it names the TOML file a sub-question asks
    about. A fact leaning on another goes where that one went, so the two are read
    together. Each part's facts come best answer first. Never by source: an article is
    about its questions, not a list of files. A heading is one line (``_heading``); a
    question that would read as the apparatus's ("Sources") gets no section.
    """
    questions = research_questions(task)
    weight = _rarity(bundle.facts)
    titled = [(question, title) for question in questions[1:] if (title := _heading(question.text))]
    grouped: dict[str | None, list[Fact]] = {None: [], **{title: [] for _, title in titled}}
    went: dict[str, str | None] = {}
    for fact in facts:
        parts = [
            (_weakness(fact, question.text, weight), position, title)
            for position, (question, title) in enumerate(titled)
            if question.id in fact.answers
        ]
        heading = min(parts)[2] if parts and not _says_what(fact, task, weight) else None
        if fact.leans_on in went:
            heading = went[fact.leans_on]
        went[fact.id] = heading
        grouped[heading].append(fact)
    return [
        (title, sorted(found, key=lambda fact: _weakness(fact, title, weight)) if title else found)
        for title, found in grouped.items()
        if found
    ]


def _says_what(fact: Fact, task: TaskSpec, weight: Callable[[str], float]) -> bool:
    """Whether the fact answers the objective by saying what the subject it asks about is."""
    objective = research_questions(task)[0]
    return objective.id in fact.answers and not _weakness(fact, objective.text, weight).undefined


def _heading(text: str) -> str | None:
    """Prose as a one-line heading: its whitespace runs one space, no citation marker in it.

    None when it would read as a heading of the apparatus (Open questions, Sources).
    """
    line = " ".join(strip_citations(text).split())
    return None if not line or _is_apparatus(line) else line


def _said(facts: list[Fact]) -> frozenset[str]:
    return frozenset().union(*(keys(strip_citations(fact.statement)) for fact in facts))


def _sequence(
    facts: list[Fact],
    after: Fact | None,
    topic: frozenset[str],
    weight: Callable[[str], float],
    *,
    first: Fact | None = None,
) -> list[Fact]:
    """The facts in an order where each part follows from the last.

    A source's facts stay together in its own order (its author's), a fact leaning on
    another right after it. The first source is the one saying most in common with the
    sentence written before them (``after``), beyond the objective's own terms, each term
    weighed by its rarity; each next one, most in common with the last; ties in reading
    order. A section starts with its best fact (``first``), then the rest of its source.
    """
    units: dict[str, list[Fact]] = {}
    for fact in sorted(facts, key=_reading_order):
        units.setdefault(fact.source_id, []).append(fact)
    remaining = list(units.values())
    ordered: list[Fact] = []
    last = [after] if after is not None else []
    if first is not None:  # the best answer opens, what leans on it after it, then its source
        unit = next(unit for unit in remaining if first in unit)
        remaining.remove(unit)
        if first.leans_on not in {fact.id for fact in unit}:
            head = [first]
            for fact in unit:
                if fact.leans_on in {item.id for item in head}:
                    head.append(fact)
            unit = head + [fact for fact in unit if fact not in head]
        ordered += unit
        last = unit
    while remaining:
        said = _said(last) - topic
        closeness = [sum(weight(key) for key in said & _said(unit)) for unit in remaining]
        unit = remaining.pop(closeness.index(max(closeness)))  # the first of the closest
        ordered += unit
        last = unit
    return ordered


def _layers(fact: Fact, bundle: ResearchBundle) -> tuple[frozenset[str], ...]:
    """What a fact says, then with its own heading, then with all its context.

    The closer a title's terms are to the sentence, the better the fact fits that section.
    """
    own = keys(fact.statement)
    heading = heading_keys(fact.section[-1:])
    return own, own | heading, fact_context(fact, bundle)


def _is_apparatus(title: str) -> bool:
    return apparatus_heading(f"## {title}")


def _usable(facts: list[Fact], excluded: set[str]) -> list[Fact]:
    """Facts not excluded, nor leaning on one that is (it would lose its referent)."""
    gone = set(excluded)
    usable = []
    for fact in facts:  # a fact leans only on an earlier one of the bundle
        if fact.id in gone or (fact.leans_on is not None and fact.leans_on in gone):
            gone.add(fact.id)
            continue
        usable.append(fact)
    return usable


def _chain(fact: Fact, bundle: ResearchBundle) -> list[Fact]:
    """The fact after the facts it leans on, earliest first."""
    chain = [fact]
    while chain[0].leans_on is not None:
        earlier = bundle.fact(chain[0].leans_on)
        if earlier is None or earlier in chain:
            break
        chain.insert(0, earlier)
    return chain


def _fact(bundle: ResearchBundle, claim_id: str) -> Fact:
    fact = bundle.fact(claim_id)
    if fact is None:
        raise ValueError(f"{claim_id} is not a fact of the bundle")
    return fact


def _paragraphs(facts: list[Fact], *, one: bool = False) -> list[list[Fact]]:
    """One paragraph per source (``one``: one in all), in the order given.

    A leaning fact follows its antecedent. A fact with a code example ends its paragraph:
    the example is shown right after it.
    """
    paragraphs: list[list[Fact]] = []
    for fact in facts:
        previous = paragraphs[-1][-1] if paragraphs else None
        joins = previous is not None and (one or previous.source_id == fact.source_id)
        if previous and joins and previous.example is None:
            paragraphs[-1].append(fact)
        else:
            paragraphs.append([fact])
    return paragraphs


def _question_number(question_id: str | None) -> int:
    return int((question_id or "q-0").removeprefix("q-"))


def _reading_order(fact: Fact) -> tuple[int, int]:
    return int(fact.source_id.removeprefix("src-")), fact.span.start
