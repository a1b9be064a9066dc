"""Writer ↔ Reviewer rounds: changes are requested, addressed, or the budget ends the run."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import pytest

from app.agents import OfflineWriterAgent
from app.errors import InvalidEdit
from app.settings import BUNDLED_CORPUS
from app.text.primitives import CITATION
from app.workflow import Workflow
from contracts import (
    DraftArticle,
    ErrorCode,
    Handoff,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    TaskState,
)
from graphs import AgentOutput, ReviewRequest, StepInfo, WriteRequest
from tests.app.test_handoff_routes import stop_before
from tests.conftest import OBJECTIVE, nodes_run, passes


@dataclass
class SloppyWriter:
    """Writes bad drafts for the first ``bad_rounds`` rounds, then defers to the real one."""

    bad_rounds: int
    body: str = (
        "# Draft\n\n## Overview\n\nThe stone was carried to the moon in 1850 [claim-9999]. "
        "Everyone agrees the stone is pretty.\n"
    )
    real: OfflineWriterAgent = field(default_factory=OfflineWriterAgent)
    reviews_seen: list[ReviewResult | None] = field(default_factory=list)

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        self.reviews_seen.append(request.review)
        previous, store, step = request.previous, request.store, request.step
        revision = previous.revision + 1 if previous else 1
        if revision > self.bad_rounds:
            return self.real.run(request)
        ref = store.put(step.artifact_id("draft"), "draft", self.body.encode(), "text/markdown")
        draft = DraftArticle(
            task_id=request.task.task_id,
            result_status="completed",
            revision=revision,
            body=ref,
            cited_claim_ids=CITATION.findall(self.body),
            word_count=20,
        )
        return AgentOutput(draft)


def _with_writer(workflow: Workflow, writer: SloppyWriter) -> Workflow:
    return Workflow(workflow.settings, context=workflow.context.with_agent("writer", writer))


def test_reviewer_requests_changes_and_the_writer_addresses_them_in_round_two(
    workflow: Workflow,
) -> None:
    writer = SloppyWriter(bad_rounds=1)
    with _with_writer(workflow, writer) as sloppy:
        outcome = sloppy.run(OBJECTIVE, "t-loop")
        state = sloppy.state("t-loop")
    assert outcome.result_status == "completed"
    assert outcome.review_rounds == 2
    first_review = writer.reviews_seen[1]
    assert first_review is not None and first_review.verdict == "changes_requested"
    codes = {change.code for change in first_review.required_changes}
    assert {ErrorCode.UNKNOWN_CLAIM, ErrorCode.UNCITED_SENTENCE} <= codes
    assert first_review.rejected_claims == ["claim-9999"]
    draft = state["draft"]
    assert draft.revision == 2
    assert "claim-9999" in draft.excluded_claim_ids
    assert "UNKNOWN_CLAIM:claim-9999" in draft.addressed_changes
    assert draft.body.revision > 1, "each round is a new revision of the draft artifact"
    article = workflow.artifact("t-loop", "article").decode()
    assert "claim-9999" not in article and "moon" not in article
    path = ("research", "join_research", "writer", "reviewer", "writer", "reviewer", "finalize")
    assert passes(nodes_run(workflow, "t-loop"), *path) == [*path]


def test_review_rounds_exhausted_end_partial_with_budget_exhausted(workflow: Workflow) -> None:
    writer = SloppyWriter(bad_rounds=5)
    with _with_writer(workflow, writer) as sloppy:
        task = sloppy.task(OBJECTIVE, budget={"max_review_rounds": 2})
        outcome = sloppy.run(task, "t-exhausted")
    assert outcome.state == TaskState.COMPLETED
    assert outcome.result_status == "partial"
    assert outcome.errors[0].code == ErrorCode.BUDGET_EXHAUSTED
    assert outcome.draft is not None and outcome.article is None
    assert outcome.review_rounds == 2
    assert [run.node_id for run in workflow.history("t-exhausted")][-1] == "conclude"


@dataclass
class RejectingReviewer:
    """A reviewer that finds nothing verifiable, as when every source was withdrawn."""

    def run(self, request: ReviewRequest) -> AgentOutput[ReviewResult]:
        task, draft = request.task, request.draft
        change = {"code": ErrorCode.QUOTE_NOT_FOUND, "reason": "no quote verifies"}
        return AgentOutput(
            ReviewResult(
                task_id=task.task_id,
                draft_revision=draft.revision,
                verdict="rejected",
                rejected_claims=draft.cited_claim_ids,
                required_changes=[change],
            )
        )


def test_a_rejected_draft_ends_the_run_rejected_with_review_rejected(workflow: Workflow) -> None:
    context = workflow.context.with_agent("reviewer", RejectingReviewer())
    with Workflow(workflow.settings, context=context) as rejecting:
        outcome = rejecting.run(OBJECTIVE, "t-rejected")
    assert outcome.state == TaskState.REJECTED
    assert outcome.result_status == "failed"
    assert ErrorCode.REVIEW_REJECTED in {error.code for error in outcome.errors}
    assert outcome.review_rounds == 1


def test_writer_honours_word_limit_and_required_sections_and_reviewer_checks_them(
    workflow: Workflow,
) -> None:
    sections = ["The Stone", "Decipherment"]
    task = workflow.task(OBJECTIVE, constraints={"max_words": 120, "required_sections": sections})
    outcome = workflow.run(task, "t-constraints")
    assert outcome.result_status == "completed"
    state = workflow.state("t-constraints")
    assert state["draft"].word_count <= 120
    article = workflow.artifact("t-constraints", "article").decode()
    for title in sections:
        assert f"## {title}" in article


def test_reviewer_flags_a_draft_over_the_word_limit() -> None:
    import tempfile
    from pathlib import Path

    from app.agents import OfflineReviewerAgent
    from app.storage.artifacts import FilesystemArtifactStore
    from contracts import ArtifactRef

    with tempfile.TemporaryDirectory() as folder:
        store = FilesystemArtifactStore(Path(folder))
        body = "# T\n\n## A\n\n" + "word " * 50 + "\n"
        ref: ArtifactRef = store.put("t-draft", "draft", body.encode(), "text/markdown")
        task = TaskSpec(
            task_id="t",
            objective="Explain it",
            constraints={"max_words": 20, "required_sections": ["A", "Missing"]},
        )
        draft = DraftArticle(
            task_id="t", result_status="completed", revision=1, body=ref, word_count=50
        )
        bundle = ResearchBundle(task_id="t", result_status="completed")
        handoff = Handoff(
            task_id="t",
            task_version=1,
            objective="Explain it",
            from_node="writer",
            next_allowed_action="reviewer",
            provenance={"producer": "writer", "node": "writer"},
        )
        step = StepInfo(thread_id="t", node="reviewer", step=3, task_version=1)
        request = ReviewRequest(task, handoff, bundle, draft, store, step)
        review = OfflineReviewerAgent().run(request).result
    codes = [change.code for change in review.required_changes]
    assert ErrorCode.CONSTRAINT_VIOLATED in codes
    assert ErrorCode.MISSING_SECTION in codes
    assert ErrorCode.UNCITED_SENTENCE in codes
    assert review.verdict == "rejected", "an empty bundle leaves nothing to write from"


@pytest.mark.parametrize("body", ["", "# Only a heading\n", "# Title\n\n## Section\n"])
def test_a_draft_with_no_cited_sentence_is_never_approved(workflow: Workflow, body: str) -> None:
    stop_before(workflow, "t-empty", "reviewer", BUNDLED_CORPUS, "reevaluate")
    workflow.put_artifact("t-empty", "draft", body.encode())
    outcome = workflow.resume("t-empty")
    nodes = [run.node_id for run in workflow.history("t-empty") if run.status == "succeeded"]
    after_edit = passes(nodes[nodes.index("reviewer") :], "reviewer", "writer", "finalize")
    assert after_edit[:2] == ["reviewer", "writer"], "the empty draft went back to the writer"
    assert outcome.result_status == "completed"
    assert CITATION.search(workflow.artifact("t-empty", "article").decode())


def test_a_word_limit_no_cited_sentence_fits_ends_the_run_at_once_with_the_reason(
    workflow: Workflow,
) -> None:
    outcome = workflow.run(workflow.task(OBJECTIVE, constraints={"max_words": 10}), "t-tiny")
    assert outcome.state == TaskState.FAILED and outcome.result_status == "failed"
    assert outcome.article is None, "nothing is published"
    assert [error.code for error in outcome.errors] == [ErrorCode.CONSTRAINT_VIOLATED]
    assert "no cited sentence fits in 10 words" in (outcome.reason or "")
    nodes = nodes_run(workflow, "t-tiny")
    assert passes(nodes, "writer", "reviewer", "conclude") == ["writer", "conclude"], (
        "no empty draft was reviewed"
    )


@pytest.mark.parametrize("body", ["", "# Only a heading\n"])
def test_an_accepted_edit_before_finalize_is_reviewed_never_published_unreviewed(
    workflow: Workflow, body: str
) -> None:
    corpus = workflow.settings.resolved_artifact_dir().parent / "corpus"
    shutil.copytree(BUNDLED_CORPUS, corpus)
    stop_before(workflow, "t-accept-empty", "finalize", corpus, "ask")
    workflow.put_artifact("t-accept-empty", "draft", body.encode())
    waiting = workflow.resume("t-accept-empty")
    assert waiting.human_request is not None
    decision = {"interrupt_id": waiting.human_request.interrupt_id, "reason": "looks fine"}
    outcome = workflow.resume("t-accept-empty", {**decision, "action": "accept_new_revision"})
    assert outcome.result_status == "completed"
    article = workflow.artifact("t-accept-empty", "article").decode()
    assert article != body and CITATION.search(article), "the empty edit was not published"
    nodes = [run.node_id for run in workflow.history("t-accept-empty") if run.status == "succeeded"]
    after = nodes[nodes.index("stale_decision") :]
    first = passes(after, "stale_decision", "reviewer", "writer")[:3]
    assert first == ["stale_decision", "reviewer", "writer"], "reviewed, then written again"


def test_an_edit_that_is_not_text_is_refused_and_the_thread_keeps_its_draft(
    workflow: Workflow,
) -> None:
    stop_before(workflow, "t-binary", "reviewer", BUNDLED_CORPUS, "reevaluate")
    before = workflow.artifact_ref("t-binary", "draft")
    with pytest.raises(InvalidEdit, match="not UTF-8 text"):
        workflow.put_artifact("t-binary", "draft", b"\x89PNG\r\n\x1a\n\xff\xfe")
    assert workflow.context.store.head(before.artifact_id) == before, "nothing was stored"
    assert workflow.resume("t-binary").result_status == "completed"
