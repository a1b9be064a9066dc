"""Offline Reviewer: walk every citation back to its source snapshot, check constraints."""

from __future__ import annotations

from dataclasses import dataclass

from app.text import CITATION, headings, sentences, strip_citations, terms, word_count
from contracts import (
    DraftArticle,
    ErrorCode,
    RequiredChange,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    Usage,
    Verdict,
)
from graphs import AgentOutput, ArtifactStore, ReviewRequest, StepInfo
from graphs.errors import ArtifactError

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


@dataclass
class OfflineReviewerAgent:
    """Deterministic checks only; a model-backed reviewer adds critique on top of these."""

    def run(self, request: ReviewRequest) -> AgentOutput[ReviewResult]:
        """Verify the draft; every problem becomes a required change with a stable code."""
        task, bundle, draft = request.task, request.bundle, request.draft
        store, step = request.store, request.step
        return self.conclude(
            task, bundle, draft, self.check(task, bundle, draft, store), store, step
        )

    def check(
        self, task: TaskSpec, bundle: ResearchBundle, draft: DraftArticle, store: ArtifactStore
    ) -> Findings:
        """The deterministic checks: citations, support, quotes against snapshots, constraints."""
        body = store.get(draft.body).decode("utf-8")
        changes: list[RequiredChange] = []
        cited_ids: list[str] = []
        for sentence in sentences(body):
            ids = CITATION.findall(sentence.text)
            if not ids:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.UNCITED_SENTENCE,
                        reason=f"sentence has no claim citation: {sentence.text[:160]!r}",
                    )
                )
                continue
            cited_ids += [claim_id for claim_id in ids if claim_id not in cited_ids]
            known = [bundle.fact(claim_id) for claim_id in ids]
            support = set().union(*(terms(fact.quote) for fact in known if fact))
            words = set(terms(strip_citations(sentence.text)))
            if support and words and len(words & support) / len(words) < SUPPORT_OVERLAP:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.UNSUPPORTED_SENTENCE,
                        reason=f"sentence says more than its cited facts: {sentence.text[:160]!r}",
                        claim_id=ids[0],
                    )
                )
        if not cited_ids:
            changes.append(
                RequiredChange(
                    code=ErrorCode.INSUFFICIENT_EVIDENCE,
                    reason="the draft cites no fact: an empty article (or one with only "
                    "headings) has nothing to verify and is never approved",
                )
            )
        accepted, rejected, checked = self._verify_claims(cited_ids, bundle, store, changes)
        self._check_constraints(task, body, changes)
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
        step.fault("after_artifact")
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
                if problem is None and source.snapshot.sha256 != source.sha256:
                    problem = f"snapshot of {source.id} is not the content research read"
                if problem is None and text[fact.span.start : fact.span.end] != fact.quote:
                    problem = (
                        f"quote of {claim_id} is not found verbatim in {source.id} at "
                        f"{fact.span.start}-{fact.span.end}"
                    )
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
        present = {title.casefold() for title in headings(body)}
        for title in task.constraints.required_sections:
            if title.casefold() not in present:
                changes.append(
                    RequiredChange(
                        code=ErrorCode.MISSING_SECTION,
                        reason=f"required section {title!r} is missing",
                        section=title,
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
