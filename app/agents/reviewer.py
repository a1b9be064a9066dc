"""Offline Reviewer: walk every citation back to its source, and check the article keeps the task.

Each check has its own code in ``ReviewResult.required_changes``; a model-backed reviewer
adds critique on top and can never remove one.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from app.agents.apparatus import open_questions, unbuilt_apparatus_lines
from app.text.antecedents import leans_on_earlier
from app.text.documents import Document, ProseSentence, read_document
from app.text.primitives import CITATION, strip_citations, terms, word_count
from app.text.relevance import off_topic
from contracts import (
    DraftArticle,
    ErrorCode,
    Fact,
    Question,
    RequiredChange,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    Usage,
    Verdict,
)
from graphs import AgentOutput, ArtifactStore, ReviewRequest, StepInfo
from graphs.citations import quote_problem
from graphs.errors import ArtifactError
from graphs.markdown import OPEN_QUESTIONS_HEADING, SOURCES_HEADING, apparatus_heading

SUPPORT_OVERLAP = 0.5
"""Share of a sentence's content terms that must appear in the facts it cites."""


@dataclass(frozen=True)
class Findings:
    """What the deterministic checks found in one draft."""

    body: str
    """The draft's markdown, as read (and hash-verified) from the store."""
    changes: list[RequiredChange]
    accepted: list[str]
    """Cited claims whose quotes were found verbatim in their source snapshots."""
    rejected: list[str]
    checked: list[str]
    """Sources whose snapshots were read."""


@dataclass(frozen=True)
class Layout:
    """The article's ``##`` sections: where each starts, and its title."""

    body: str
    starts: list[int]
    titles: list[str]

    @classmethod
    def of(cls, body: str) -> Layout:
        """The sections of a markdown body (``##`` headings outside code fences)."""
        starts: list[int] = []
        titles: list[str] = []
        offset = 0
        fence: str | None = None
        for line in body.splitlines(keepends=True):
            marker = line.lstrip()[:3]
            if marker in ("```", "~~~"):
                fence = None if fence == marker else (fence or marker)
            elif fence is None and line.startswith("## "):
                starts.append(offset)
                titles.append(line[3:].strip())
            offset += len(line)
        return cls(body, starts, titles)

    def section_at(self, offset: int) -> str | None:
        """The title of the section holding this offset (None before the first)."""
        at = bisect.bisect_right(self.starts, offset) - 1
        return self.titles[at] if at >= 0 else None

    def text_of(self, title: str) -> str:
        """The text of the first section with this title (case-insensitive), else ''."""
        for at, found in enumerate(self.titles):
            if found.casefold() == title.casefold():
                end = self.starts[at + 1] if at + 1 < len(self.starts) else len(self.body)
                return self.body[self.starts[at] : end]
        return ""


def _short(title: str | None) -> str | None:
    return title[:200] if title is not None else None


@dataclass
class OfflineReviewerAgent:
    """Deterministic checks only; a model-backed reviewer adds critique on top of these."""

    def run(self, request: ReviewRequest) -> AgentOutput[ReviewResult]:
        """Verify the draft; every problem becomes a required change with a stable code."""
        task, bundle, draft = request.task, request.bundle, request.draft
        store, step = request.store, request.step
        findings = self.check(task, bundle, draft, store, open_questions(request))
        return self.conclude(task, bundle, draft, findings, store, step)

    def check(
        self,
        task: TaskSpec,
        bundle: ResearchBundle,
        draft: DraftArticle,
        store: ArtifactStore,
        still_open: list[Question] | None = None,
    ) -> Findings:
        """Every deterministic check; each problem is a required change with its own code.

        Citations walked back to the snapshots (verbatim, from prose), support, the task
        (sections present, non-empty and on topic; word limit; every question answered or
        listed as open), what a reader needs (no uncited or dangling sentence, no code or
        table quoted, every cited source in the Sources list), and the apparatus exactly
        as built from the contracts (``still_open``: the questions the writer was handed as
        open; the bundle's when not given).
        """
        body = store.get(draft.body).decode("utf-8")
        article = read_document(body)
        layout = Layout.of(body)
        changes: list[RequiredChange] = []
        cited_ids: list[str] = []
        cited_by_section: dict[str | None, list[list[str]]] = {}
        cited_in_paragraph: dict[int, list[str]] = {}
        for sentence in article.sentences:
            heading = layout.section_at(sentence.start)
            if heading is not None and apparatus_heading(f"## {heading}"):
                continue
            ids = CITATION.findall(sentence.text)
            if not ids:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.UNCITED_SENTENCE,
                        reason=f"sentence has no claim citation: {sentence.plain[:160]!r}",
                        section=_short(heading),
                    )
                )
                continue
            cited_ids += [claim_id for claim_id in ids if claim_id not in cited_ids]
            cited_by_section.setdefault(heading, []).append(ids)
            earlier = cited_in_paragraph.setdefault(sentence.block, [])
            known = [bundle.fact(claim_id) for claim_id in ids]
            self._check_support(sentence.text, ids, known, changes)
            self._check_referent(sentence, ids, known, earlier, changes)
            earlier += ids
        if not cited_ids:
            changes.append(
                RequiredChange(
                    code=ErrorCode.EMPTY_ARTICLE,
                    reason="the draft cites no fact: an empty article (or one with only "
                    "headings) has nothing to verify and is never approved",
                )
            )
        for block in article.blocks:
            heading = layout.section_at(block.start)
            in_apparatus = heading is not None and apparatus_heading(f"## {heading}")
            if not block.prose and block.kind != "heading" and not in_apparatus:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.NON_PROSE_QUOTED,
                        reason=f"the article holds a {block.kind} block (lines "
                        f"{block.first_line}-{block.last_line}); an article is prose: "
                        "code, tables, HTML and images are not sentences",
                        section=_short(heading),
                    )
                )
        accepted, rejected, checked = self._verify_claims(cited_ids, bundle, store, changes)
        self._check_constraints(task, body, changes)
        self._check_sections(task, bundle, cited_by_section, layout, changes)
        if cited_ids:  # an empty article answers nothing: EMPTY_ARTICLE says it all
            self._check_questions(task, bundle, cited_ids, layout, changes)
        self._check_sources_listed(bundle, cited_ids, layout, changes)
        open_now = bundle.open_questions if still_open is None else still_open
        self._check_apparatus(unbuilt_apparatus_lines(body, bundle, open_now), changes)
        return Findings(body, changes, accepted, rejected, checked)

    @staticmethod
    def _check_support(
        text: str, ids: list[str], known: list[Fact | None], changes: list[RequiredChange]
    ) -> None:
        support = set().union(*(terms(fact.quote) for fact in known if fact))
        words = set(terms(strip_citations(text)))
        if support and words and len(words & support) / len(words) < SUPPORT_OVERLAP:
            changes.append(
                RequiredChange(
                    code=ErrorCode.UNSUPPORTED_SENTENCE,
                    reason=f"sentence says more than its cited facts: {text[:160]!r}",
                    claim_id=ids[0],
                )
            )

    @staticmethod
    def _check_referent(
        sentence: ProseSentence,
        ids: list[str],
        known: list[Fact | None],
        earlier: list[str],
        changes: list[RequiredChange],
    ) -> None:
        """A sentence whose pronoun points back must follow what it points back to."""
        missing = [
            fact.leans_on
            for fact in known
            if fact is not None
            and fact.leans_on is not None
            and fact.leans_on not in earlier
            and fact.leans_on not in ids
        ]
        opens_leaning = sentence.position == 0 and leans_on_earlier(strip_citations(sentence.plain))
        if missing or opens_leaning:
            needs = f"; cite {', '.join(dict.fromkeys(missing))} before it" if missing else ""
            changes.append(
                RequiredChange(
                    code=ErrorCode.DANGLING_REFERENCE,
                    reason="sentence refers back to something its paragraph never names"
                    f"{needs}: {sentence.plain[:160]!r}",
                    claim_id=ids[0],
                )
            )

    def conclude(
        self,
        task: TaskSpec,
        bundle: ResearchBundle,
        draft: DraftArticle,
        findings: Findings,
        store: ArtifactStore,
        step: StepInfo,
        *,
        critique: list[RequiredChange] | None = None,
        tokens: int = 0,
    ) -> AgentOutput[ReviewResult]:
        """Write the report and decide: approved only when no check and no critique objects.

        ``critique`` holds a model's changes; they are added to the findings, never
        replace them, so nothing a model says can remove a failed check.
        """
        changes = findings.changes + list(critique or [])
        accepted, rejected = findings.accepted, findings.rejected
        report = store.put(
            step.artifact_id("review"),
            "review",
            self._report(draft, accepted, rejected, changes).encode(),
            "text/markdown",
        )
        usable = {fact.id for fact in bundle.facts} - set(draft.excluded_claim_ids) - set(rejected)
        if not changes:
            verdict: Verdict = "approved"
        elif not accepted and not usable:
            verdict = "rejected"  # nothing verifiable is left to write from
        else:
            verdict = "changes_requested"
        result = ReviewResult(
            task_id=task.task_id,
            draft_revision=draft.revision,
            verdict=verdict,
            accepted_claims=accepted,
            rejected_claims=rejected,
            required_changes=changes,
            checked_sources=findings.checked,
            report=report,
        )
        return AgentOutput(result, usage=Usage(tool_calls=len(findings.checked), tokens=tokens))

    def _verify_claims(
        self,
        cited_ids: list[str],
        bundle: ResearchBundle,
        store: ArtifactStore,
        changes: list[RequiredChange],
    ) -> tuple[list[str], list[str], list[str]]:
        accepted: list[str] = []
        rejected: list[str] = []
        checked: list[str] = []
        snapshots: dict[str, str] = {}
        documents: dict[str, Document] = {}
        for claim_id in cited_ids:
            fact = bundle.fact(claim_id)
            if fact is None:
                rejected.append(claim_id)
                changes.append(
                    RequiredChange(
                        code=ErrorCode.UNKNOWN_CLAIM,
                        reason=f"{claim_id} is not a fact in the research bundle",
                        claim_id=claim_id,
                    )
                )
                continue
            source = bundle.source(fact.source_id)
            problem: str | None = None
            if source is None:
                problem = f"{claim_id} cites {fact.source_id}, which research did not read"
            else:
                if source.id not in snapshots:
                    try:
                        snapshots[source.id] = store.get(source.snapshot).decode("utf-8")
                    except (ArtifactError, UnicodeDecodeError) as error:
                        snapshots[source.id] = ""
                        problem = f"snapshot of {source.id} cannot be verified: {error}"
                    if source.id not in checked:
                        checked.append(source.id)
                text = snapshots[source.id]
                if problem is None:
                    problem = quote_problem(fact, source, text)
                if problem is None:
                    if source.id not in documents:
                        documents[source.id] = read_document(text, source.snapshot.media_type)
                    block = documents[source.id].block_at(fact.span.start, fact.span.end)
                    if block is None or not block.prose:
                        kind = block.kind if block else "text across blocks"
                        rejected.append(claim_id)
                        changes.append(
                            RequiredChange(
                                code=ErrorCode.NON_PROSE_QUOTED,
                                reason=f"{claim_id} quotes {kind} of {source.id}, not prose",
                                claim_id=claim_id,
                            )
                        )
                        continue
            if problem is None:
                accepted.append(claim_id)
            else:
                rejected.append(claim_id)
                changes.append(
                    RequiredChange(
                        code=ErrorCode.QUOTE_NOT_FOUND, reason=problem, claim_id=claim_id
                    )
                )
        return accepted, rejected, checked

    def _check_constraints(self, task: TaskSpec, body: str, changes: list[RequiredChange]) -> None:
        limit = task.constraints.max_words
        words = word_count(body)
        if limit is not None and words > limit:
            changes.append(
                RequiredChange(
                    code=ErrorCode.CONSTRAINT_VIOLATED,
                    reason=f"article has {words} words; the limit is {limit}",
                )
            )

    @staticmethod
    def _check_sections(
        task: TaskSpec,
        bundle: ResearchBundle,
        cited_by_section: dict[str | None, list[list[str]]],
        layout: Layout,
        changes: list[RequiredChange],
    ) -> None:
        """Each required section is there, says something, and says it about its title."""
        present = {title.casefold(): title for title in layout.titles}
        for title in task.constraints.required_sections:
            found = present.get(title.casefold())
            if found is None:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.MISSING_SECTION,
                        reason=f"required section {title!r} is missing",
                        section=_short(title),
                    )
                )
                continue
            if apparatus_heading(f"## {found}"):
                continue
            sentences = cited_by_section.get(found, [])
            if not sentences:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.EMPTY_SECTION,
                        reason=f"required section {title!r} has no cited sentence",
                        section=_short(title),
                    )
                )
                continue
            on, too_few = off_topic(title, sentences, bundle)
            if too_few:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.OFF_TOPIC_SECTION,
                        reason=f"required section {title!r} is off topic: {on} of "
                        f"{len(sentences)} sentences cite a fact about {title!r}",
                        section=_short(title),
                    )
                )

    @staticmethod
    def _check_questions(
        task: TaskSpec,
        bundle: ResearchBundle,
        cited_ids: list[str],
        layout: Layout,
        changes: list[RequiredChange],
    ) -> None:
        """Each of the task's questions is answered by a cited fact, or listed as open."""
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
                    changes.append(
                        RequiredChange(
                            code=ErrorCode.QUESTION_NOT_ADDRESSED,
                            reason=f"{question_id} {text[:120]!r} has no answer in the sources, "
                            f"and the article does not list it under {OPEN_QUESTIONS_HEADING!r}",
                        )
                    )
            elif question_id not in answered:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.QUESTION_NOT_ADDRESSED,
                        reason=f"{question_id} {text[:120]!r} is not answered: the article "
                        "cites no fact research found for it",
                    )
                )

    @staticmethod
    def _check_sources_listed(
        bundle: ResearchBundle, cited_ids: list[str], layout: Layout, changes: list[RequiredChange]
    ) -> None:
        """A reader can follow every citation: its source is in the Sources list."""
        listed = layout.text_of(SOURCES_HEADING)
        missing: dict[str, list[str]] = {}
        for claim_id in cited_ids:
            fact = bundle.fact(claim_id)
            if fact is not None and not re.search(rf"\b{fact.source_id}\b", listed):
                missing.setdefault(fact.source_id, []).append(claim_id)
        for source_id, claims in missing.items():
            changes.append(
                RequiredChange(
                    code=ErrorCode.SOURCE_NOT_LISTED,
                    reason=f"{', '.join(claims)} cite {source_id}, which the article's "
                    f"{SOURCES_HEADING!r} list does not name",
                    claim_id=claims[0],
                )
            )

    @staticmethod
    def _check_apparatus(unbuilt: list[str], changes: list[RequiredChange]) -> None:
        """The Open questions and Sources sections hold only what their builder writes.

        Their lines are not checked as prose, so a line the builder could not have written
        (prose a person added, a claim hidden in an entry) is a change to make.
        """
        if unbuilt:
            changes.append(
                RequiredChange(
                    code=ErrorCode.APPARATUS_ALTERED,
                    reason=f"the {OPEN_QUESTIONS_HEADING!r}/{SOURCES_HEADING!r} sections hold "
                    f"{len(unbuilt)} line(s) not built from the research, first: "
                    f"{unbuilt[0][:160]!r}",
                )
            )

    def _report(
        self,
        draft: DraftArticle,
        accepted: list[str],
        rejected: list[str],
        changes: list[RequiredChange],
    ) -> str:
        lines = [f"# Review of draft revision {draft.revision}", ""]
        lines.append(f"Accepted claims: {', '.join(accepted) or 'none'}")
        lines.append(f"Rejected claims: {', '.join(rejected) or 'none'}")
        lines += ["", "## Required changes", ""]
        lines += [f"- {change.code.value}: {change.reason}" for change in changes] or ["None."]
        return "\n".join(lines) + "\n"
