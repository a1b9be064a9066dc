"""Offline Reviewer: walk every citation back to its source, and check the article keeps the task.

Each check has its own code in ``ReviewResult.required_changes``; a model-backed reviewer
adds critique on top and can never remove one. The checks themselves are in
``app/agents/citation_checks.py`` and ``app/agents/task_checks.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.agents.apparatus import open_questions, unbuilt_apparatus_lines
from app.agents.article_layout import Layout
from app.agents.citation_checks import (
    check_blocks,
    check_sentences,
    check_sources_listed,
    required,
    verify_claims,
)
from app.agents.task_checks import (
    check_apparatus,
    check_constraints,
    check_fragments,
    check_opening,
    check_questions,
    check_relevance,
    check_sections,
)
from app.text.documents import read_document
from contracts import (
    DraftArticle,
    ErrorCode,
    Question,
    RequiredChange,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    Usage,
    Verdict,
)
from graphs import AgentOutput, ArtifactStore, ReviewRequest, StepInfo


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
        table quoted, each code example shown right after the sentence introducing it and
        the same as in its source, every cited source in the Sources list), and the
        apparatus exactly as built from the contracts (``still_open``: the questions the
        writer was handed as open; the bundle's when not given).
        """
        body = store.get(draft.body).decode("utf-8")
        article = read_document(body)
        layout = Layout.of(body)
        changes: list[RequiredChange] = []
        cited_ids, cited_by_section = check_sentences(article, layout, bundle, changes)
        if not cited_ids:
            reason = (
                "the draft cites no fact: an empty article (or one with only "
                "headings) has nothing to verify and is never approved"
            )
            changes.append(required(ErrorCode.EMPTY_ARTICLE, reason))
        check_blocks(article, layout, bundle, changes)
        accepted, rejected, checked = verify_claims(cited_ids, bundle, store, changes)
        check_constraints(task, body, changes)
        check_sections(task, bundle, cited_by_section, layout, changes)
        if cited_ids:  # an empty article answers nothing: EMPTY_ARTICLE says it all
            check_questions(task, bundle, cited_ids, layout, changes)
            check_opening(bundle, cited_ids, cited_by_section, changes)
            check_fragments(bundle, cited_ids, changes)
            check_relevance(task, bundle, cited_by_section, changes)
        check_sources_listed(bundle, cited_ids, layout, changes)
        open_now = bundle.open_questions if still_open is None else still_open
        check_apparatus(unbuilt_apparatus_lines(body, bundle, open_now), changes)
        return Findings(body, changes, accepted, rejected, checked)

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
