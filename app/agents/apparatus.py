"""The article's apparatus: its Open questions and its closing Sources list.

Every writer, offline or model-backed, ends its draft with these, built here from the
contracts alone, so a reader can follow each ``[claim-N]`` to a file, a section and a line
range without tools, and sees which of the task's questions the corpus left unanswered.
Titles, headings and questions come from the corpus and from people: each entry is made
safe to show (``app/text/publishable.py``) as it is built, so the entries the Reviewer
expects are the ones a writer wrote.
The Reviewer checks both (``app/agents/task_checks.py``).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

from app.text.publishable import publishable
from contracts import Fact, Question, ResearchBundle, Source
from graphs import ReviewRequest, WriteRequest
from graphs.markdown import OPEN_QUESTIONS_HEADING, SOURCES_HEADING, apparatus_heading

UNANSWERED = "no source in the corpus answers it"


def file_name(source: Source) -> str:
    """The file a source was read from, as a person would look for it."""
    path = unquote(urlparse(source.uri).path) or source.uri
    return PurePosixPath(path).name or source.uri


def where(fact: Fact, title: str | None = None) -> str:
    """Where a fact's quote sits: its section path (below the title) and line range."""
    parts = []
    path = fact.section[1:] if fact.section[:1] == [title] else fact.section
    if path:
        parts.append("§ " + " › ".join(path))
    if fact.lines is not None:
        if fact.lines.first == fact.lines.last:
            parts.append(f"line {fact.lines.first}")
        else:
            parts.append(f"lines {fact.lines.first}–{fact.lines.last}")
    return ", ".join(parts)


def sources_list(bundle: ResearchBundle, cited: list[str]) -> list[str]:
    """The Sources section: each cited source with the claims that cite it, in order."""
    by_source: dict[str, list[Fact]] = {}
    for claim_id in cited:
        fact = bundle.fact(claim_id)
        if fact is not None:
            by_source.setdefault(fact.source_id, []).append(fact)
    if not by_source:
        return []
    lines = [f"## {SOURCES_HEADING}", ""]
    for source_id in sorted(by_source, key=lambda found: int(found.removeprefix("src-"))):
        source = bundle.source(source_id)
        if source is None:
            continue
        cited_facts = sorted(by_source[source_id], key=lambda fact: fact.span.start)
        claims = "; ".join(claim_entry(fact, source) for fact in cited_facts)
        lines.append(source_entry(source) + claims)
    return lines + [""]


def source_entry(source: Source) -> str:
    """The start of a source's line in the Sources list, up to its claims (safe to show)."""
    entry = f"- {source.id}: *{source.title}*, {file_name(source)} (sha256 {source.sha256[:12]}): "
    return publishable(entry)


def claim_entry(fact: Fact, source: Source) -> str:
    """One claim in its source's line: its id, and where its quote sits (safe to show)."""
    return publishable(fact.id + (f" ({found})" if (found := where(fact, source.title)) else ""))


def open_questions_list(questions: list[Question]) -> list[str]:
    """The Open questions section: each question the corpus does not answer."""
    if not questions:
        return []
    lines = [f"## {OPEN_QUESTIONS_HEADING}", ""]
    for question in questions:
        answer = (
            f"answered by a person, not by the sources: {' '.join(question.answer.split())}"
            if question.answer
            else UNANSWERED
        )
        lines.append(publishable(f"- {question.id}: {' '.join(question.text.split())} ({answer})"))
    return lines + [""]


def apparatus(bundle: ResearchBundle, open_questions: list[Question], cited: list[str]) -> str:
    """Open questions, then Sources, as markdown to end a draft with."""
    lines = open_questions_list(open_questions) + sources_list(bundle, cited)
    return "\n".join(lines).rstrip() + "\n" if lines else ""


def _split(markdown: str) -> tuple[list[str], list[str]]:
    """A body's lines outside and inside its Open questions and Sources sections."""
    outside: list[str] = []
    inside: list[str] = []
    within = False
    for line in markdown.splitlines():
        if line.startswith("#"):
            within = apparatus_heading(line)
        (inside if within else outside).append(line)
    return outside, inside


def without_apparatus(markdown: str) -> str:
    """A body with any Open questions or Sources section removed.

    A model may write its own; the one a reader gets is always built from the contracts.
    """
    return "\n".join(_split(markdown)[0]).rstrip() + "\n"


def unbuilt_apparatus_lines(
    markdown: str, bundle: ResearchBundle, still_open: list[Question]
) -> list[str]:
    """Lines of a body's Open questions and Sources sections the builder could not write.

    The apparatus is generated, never written, and its lines are not checked as prose, so
    each must be one the builder writes from the contracts: a heading, a question still
    open as listed, or a source's entry naming claims of that source, each with where its
    quote sits. A person who removes a sentence may leave its claim listed (the entry is
    still true); prose added there, or a claim hidden in an entry, is not such a line.
    """
    allowed = {f"## {OPEN_QUESTIONS_HEADING}", f"## {SOURCES_HEADING}"}
    allowed |= {line for line in open_questions_list(still_open) if line.strip()}
    entries = {
        source_entry(source): {
            claim_entry(fact, source) for fact in bundle.facts if fact.source_id == source.id
        }
        for source in bundle.sources
    }

    def built(line: str) -> bool:
        if line in allowed:
            return True
        for start, claims in entries.items():
            if line.startswith(start):
                named = line.removeprefix(start).split("; ")
                return all(claim in claims for claim in named)
        return False

    lines = (line.rstrip() for line in _split(markdown)[1] if line.strip())
    return [line for line in lines if not built(line)]


def open_questions(request: WriteRequest | ReviewRequest) -> list[Question]:
    """The task's questions still open, with any answer a person gave."""
    handed = request.handoff.open_questions if request.handoff else []
    return list(handed) or list(request.bundle.open_questions)
