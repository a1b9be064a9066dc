"""The Reviewer's checks that an article keeps its task, beyond what each citation says.

The word limit, the required sections (present, not empty, on topic), every question
answered or listed as open, and the apparatus exactly as its builder writes it. Each
problem is a required change with its own code.
"""

from __future__ import annotations

import re

from app.agents.article_layout import Layout
from app.agents.citation_checks import required
from app.text.answer_types import asked_type, holds
from app.text.fragments import fragment
from app.text.primitives import word_count
from app.text.relevance import off_topic, unrelated
from contracts import ErrorCode, RequiredChange, ResearchBundle, TaskSpec
from graphs.markdown import OPEN_QUESTIONS_HEADING, SOURCES_HEADING, apparatus_heading


def check_constraints(task: TaskSpec, body: str, changes: list[RequiredChange]) -> None:
    """The article keeps within the task's word limit."""
    limit = task.constraints.max_words
    words = word_count(body)
    if limit is not None and words > limit:
        reason = f"article has {words} words; the limit is {limit}"
        changes.append(required(ErrorCode.CONSTRAINT_VIOLATED, reason))


def check_sections(
    task: TaskSpec,
    bundle: ResearchBundle,
    cited_by_section: dict[str | None, list[list[str]]],
    layout: Layout,
    changes: list[RequiredChange],
) -> None:
    """Each required section is there, says something, and says it about its title.

    No other heading stands over nothing either.
    """
    present = {title.casefold(): title for title in layout.titles}
    asked = {title.casefold() for title in task.constraints.required_sections}
    for title in layout.titles:
        if title.casefold() in asked or apparatus_heading(f"## {title}"):
            continue
        if not cited_by_section.get(title):
            reason = f"section {title!r} has a heading and no cited sentence under it"
            changes.append(required(ErrorCode.EMPTY_SECTION, reason, section=title))
    for title in task.constraints.required_sections:
        found = present.get(title.casefold())
        if found is None:
            reason = f"required section {title!r} is missing"
            changes.append(required(ErrorCode.MISSING_SECTION, reason, section=title))
            continue
        if apparatus_heading(f"## {found}"):
            continue
        sentences = cited_by_section.get(found, [])
        if not sentences:
            reason = f"required section {title!r} has no cited sentence"
            changes.append(required(ErrorCode.EMPTY_SECTION, reason, section=title))
            continue
        on, too_few = off_topic(title, sentences, bundle)
        if too_few:
            reason = (
                f"required section {title!r} is off topic: {on} of "
                f"{len(sentences)} sentences cite a fact about {title!r}"
            )
            changes.append(required(ErrorCode.OFF_TOPIC_SECTION, reason, section=title))


def check_questions(
    task: TaskSpec,
    bundle: ResearchBundle,
    cited_ids: list[str],
    layout: Layout,
    changes: list[RequiredChange],
) -> None:
    """Each of the task's questions is answered by a cited fact, or listed as open.

    A question asking for a number, a year, a person or a place is answered only by a
    cited fact that holds one (``app/text/answer_types.py``).
    """
    open_ids = {question.id for question in bundle.open_questions}
    listed = layout.text_of(OPEN_QUESTIONS_HEADING)
    answered = {
        question_id
        for fact in map(bundle.fact, cited_ids)
        if fact is not None
        for question_id in fact.answers
    }
    for number, text in enumerate(task.research_questions(), start=1):
        question_id = f"q-{number}"
        if question_id in open_ids:
            if not re.search(rf"\b{question_id}\b", listed):
                reason = (
                    f"{question_id} {text[:120]!r} has no answer in the sources, "
                    f"and the article does not list it under {OPEN_QUESTIONS_HEADING!r}"
                )
                changes.append(required(ErrorCode.QUESTION_NOT_ADDRESSED, reason))
        elif question_id not in answered:
            reason = (
                f"{question_id} {text[:120]!r} is not answered: the article "
                "cites no fact research found for it"
            )
            changes.append(required(ErrorCode.QUESTION_NOT_ADDRESSED, reason))
        elif (kind := asked_type(text)) and not any(
            holds(kind, fact.statement, text)
            for fact in map(bundle.fact, cited_ids)
            if fact is not None and question_id in fact.answers
        ):
            reason = (
                f"{question_id} {text[:120]!r} asks for a {kind.value}; "
                "no cited fact answering it holds one"
            )
            changes.append(required(ErrorCode.WRONG_ANSWER_TYPE, reason))


def check_opening(
    bundle: ResearchBundle,
    cited_ids: list[str],
    cited_by_section: dict[str | None, list[list[str]]],
    changes: list[RequiredChange],
) -> None:
    """An article whose objective (q-1) is answered opens with that answer.

    The text before the first section heading cites a fact answering q-1: a reader learns
    what was asked first, then the detail.
    """
    answers = {
        claim for claim in cited_ids if (fact := bundle.fact(claim)) and "q-1" in fact.answers
    }
    opening = {claim for sentence in cited_by_section.get(None, []) for claim in sentence}
    if answers and not answers & opening:
        reason = (
            "the article does not open with the answer to the objective (q-1): the text "
            f"before its first section cites none of {', '.join(sorted(answers))}"
        )
        changes.append(required(ErrorCode.NO_DIRECT_ANSWER, reason))


def check_fragments(
    bundle: ResearchBundle, cited_ids: list[str], changes: list[RequiredChange]
) -> None:
    """No cited fact is a fragment: too short, or a pointer elsewhere (``app/text/fragments``).

    One that leans on an earlier sentence is DANGLING_REFERENCE's to name.
    """
    for claim in cited_ids:
        fact = bundle.fact(claim)
        reason = fragment(fact.statement, after_antecedent=True) if fact else None
        if fact is not None and reason:
            detail = f"{claim} {fact.statement[:80]!r} cannot stand alone: {reason}"
            changes.append(required(ErrorCode.FRAGMENT, detail, claim_id=claim))


def check_relevance(
    task: TaskSpec,
    bundle: ResearchBundle,
    cited_by_section: dict[str | None, list[list[str]]],
    changes: list[RequiredChange],
) -> None:
    """Every cited fact is relevant to a question, or to the required section it is under.

    A sentence on no question's topic is an aside, whatever the word limit leaves room
    for (``app/text/relevance.py``: ``unrelated``).
    """
    asked = {title.casefold(): title for title in task.constraints.required_sections}
    under = {
        claim: asked.get(title.casefold()) if title else None
        for title, sentences in cited_by_section.items()
        for sentence in sentences
        for claim in sentence
    }
    for claim in unrelated(under, bundle, task.research_questions(), under):
        fact = bundle.fact(claim)
        statement = fact.statement[:80] if fact else ""
        reason = (
            f"{claim} {statement!r} is relevant to no question of the task"
            + (" nor to its section" if under[claim] else "")
            + ": leave it out"
        )
        changes.append(required(ErrorCode.OFF_TOPIC_SENTENCE, reason, claim_id=claim))


def check_apparatus(unbuilt: list[str], changes: list[RequiredChange]) -> None:
    """The Open questions and Sources sections hold only what their builder writes.

    Their lines are not checked as prose, so a line the builder could not have written
    (prose a person added, a claim hidden in an entry) is a change to make.
    """
    if unbuilt:
        reason = (
            f"the {OPEN_QUESTIONS_HEADING!r}/{SOURCES_HEADING!r} sections hold "
            f"{len(unbuilt)} line(s) not built from the research, first: "
            f"{unbuilt[0][:160]!r}"
        )
        changes.append(required(ErrorCode.APPARATUS_ALTERED, reason))
