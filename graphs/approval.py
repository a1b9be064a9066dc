"""Finalize publishes only what a reviewer approved, proven from the ledger and the sources.

The checkpoint is no proof: a server client's ``update_state``, or anyone who can write the
database, can put any review into state. The run ledger records each attempt's update as
the node returned it, so the proof rests there: the review finalize is handed must be the
update of the reviewer's latest succeeded attempt (whose ledger row carries its input
hash), for the very draft in state, whose sha256 the review names; and every claim those
bytes cite must still be found verbatim in its source snapshot, at the hash research
recorded. Any gap raises ``ApprovalUnproven``: nothing is published, the thread stays at
finalize (``handoff cancel`` ends it, or a real review is run).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from contracts import DraftArticle, ResearchBundle, ReviewResult
from graphs.citations import quote_problem
from graphs.errors import ArtifactError, IntegrityError
from graphs.markdown import cited_claims
from graphs.ports import ArtifactStore, RunLedger


class ApprovalUnproven(IntegrityError):
    """Finalize was handed an approval the ledger or the sources do not bear out."""


def _refuse(thread_id: str, why: str) -> ApprovalUnproven:
    return ApprovalUnproven(
        f"thread {thread_id!r}: the approval cannot be proven ({why}); nothing was "
        "published and the thread waits at finalize: run a real review, or cancel it"
    )


def recorded_update(ledger: RunLedger, thread_id: str, node: str) -> dict[str, Any] | None:
    """The update the node's latest succeeded attempt returned, as the ledger holds it."""
    stored = ledger.latest_result(thread_id, node)
    if stored is None:
        return None
    update = json.loads(stored)
    return update if isinstance(update, dict) else None


def prove_approval(
    *,
    thread_id: str,
    reviewer: str,
    draft: DraftArticle,
    review: ReviewResult,
    bundle: ResearchBundle,
    store: ArtifactStore,
    ledger: RunLedger,
) -> bytes:
    """The approved draft's bytes, once the approval is proven; else ApprovalUnproven."""
    if review.verdict != "approved":
        raise _refuse(thread_id, f"the review's verdict is {review.verdict!r}")
    if review.draft_sha256 != draft.body.sha256 or review.draft_revision != draft.revision:
        named = review.draft_sha256[:12] if review.draft_sha256 else "no bytes"
        raise _refuse(
            thread_id,
            f"the review approved revision {review.draft_revision} ({named}), the draft is "
            f"revision {draft.revision} ({draft.body.sha256[:12]})",
        )
    recorded = recorded_update(ledger, thread_id, reviewer)
    if recorded is None:
        raise _refuse(thread_id, f"the ledger records no succeeded {reviewer} attempt")
    try:
        ledger_review = ReviewResult.model_validate(recorded.get("review"))
        ledger_draft = DraftArticle.model_validate(recorded.get("draft"))
    except ValidationError as error:
        raise _refuse(thread_id, f"the ledger's {reviewer} record is unreadable: {error}") from None
    if ledger_review != review or ledger_draft != draft:
        raise _refuse(
            thread_id,
            f"the review and draft in state are not what the {reviewer}'s latest attempt "
            f"returned (it returned verdict {ledger_review.verdict!r} for "
            f"{ledger_draft.body.artifact_id}@{ledger_draft.body.revision})",
        )
    body = store.get(draft.body)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _refuse(thread_id, f"the draft is not UTF-8 text: {error}") from None
    cited = cited_claims(text)
    if not cited:  # an approval of text traced to no source proves nothing of it
        raise _refuse(thread_id, "the draft cites no claim of the research bundle")
    snapshots: dict[str, str] = {}
    for claim_id in cited:
        fact = bundle.fact(claim_id)
        source = bundle.source(fact.source_id) if fact else None
        if fact is None or source is None:
            raise _refuse(thread_id, f"{claim_id} is not a sourced fact of the research bundle")
        if source.id not in snapshots:
            try:
                snapshots[source.id] = store.get(source.snapshot).decode("utf-8")
            except (ArtifactError, UnicodeDecodeError) as error:
                raise _refuse(
                    thread_id, f"snapshot of {source.id} cannot be read: {error}"
                ) from None
        problem = quote_problem(fact, source, snapshots[source.id])
        if problem is not None:
            raise _refuse(thread_id, problem)
    return body
