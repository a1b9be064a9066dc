"""Finalize publishes only a proven approval: forged reviews, foreign drafts and edited
claims are refused, on both backends.

The edits go through LangGraph's ``update_state`` on the Workflow's own graph, which no
server policy guards: what is proven here is that the graph itself refuses them. A review
is written as the node that hands the review on (``tests.placing.hands_review_on``), so
the edit takes the route a real review takes, however the project wired the Reviewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from app.workflow import Workflow
from contracts import DraftArticle, Fact, ResearchBundle, ReviewResult, TaskState
from graphs import AgentOutput
from graphs.approval import ApprovalUnproven
from graphs.errors import IntegrityError
from tests.app.test_review_loop import SloppyWriter
from tests.conftest import OBJECTIVE
from tests.placing import hands_review_on

FORGED = "The Rosetta Stone was carved by aliens in 1999 as a prank on Champollion."


def quoting(fact: Fact, quote: str) -> Fact:
    """The fact claiming and quoting ``quote`` at its old start (its span fits the quote)."""
    span = fact.span.model_copy(update={"end": fact.span.start + len(quote)})
    return fact.model_copy(update={"claim": quote, "quote": quote, "span": span})


def forged_bundle(bundle: ResearchBundle) -> ResearchBundle:
    """Every fact now claims and quotes the fabricated sentence."""
    facts = [quoting(fact, FORGED) for fact in bundle.facts]
    return bundle.model_copy(update={"facts": facts})


def published(workflow: Workflow, thread_id: str) -> bool:
    """Whether an article artifact was stored for the thread."""
    return workflow.context.store.head(f"{thread_id}-article") is not None


def test_a_forged_approval_of_a_rejected_draft_is_refused_and_nothing_is_published(
    workflow: Workflow,
) -> None:
    task = workflow.task(
        OBJECTIVE,
        policies={"require_approval": True, "on_review_exhausted": "ask"},
        budget={"max_review_rounds": 1},
    )
    assert workflow.run(task, "forged").state == TaskState.INPUT_REQUIRED
    config = workflow.config("forged")
    bundle: ResearchBundle = workflow.state("forged")["research"]
    workflow.graph.update_state(
        config, {"research": forged_bundle(bundle)}, as_node="join_research"
    )
    assert workflow.resume("forged").state == TaskState.INPUT_REQUIRED, "asks approval again"
    request = workflow.pending("forged")
    assert request is not None and request.request_kind == "approve_research"
    outcome = workflow.resume("forged", {"interrupt_id": request.interrupt_id, "action": "approve"})
    assert outcome.state == TaskState.INPUT_REQUIRED, "the reviewer did not approve it"
    state = workflow.state("forged")
    review: ReviewResult = state["review"]
    draft: DraftArticle = state["draft"]
    assert review.verdict != "approved" and review.rejected_claims
    forged = review.model_copy(
        update={
            "verdict": "approved",
            "rejected_claims": [],
            "required_changes": [],
            "draft_sha256": draft.body.sha256,
        }
    )
    workflow.graph.update_state(
        config, {"review": forged}, as_node=hands_review_on(workflow.wiring)
    )

    with pytest.raises(ApprovalUnproven) as refused:
        workflow.resume("forged")

    assert "not what the reviewer's latest attempt returned" in refused.value.message
    assert not published(workflow, "forged")
    assert workflow.state("forged").get("outcome") is None, "no outcome was recorded"


def test_another_threads_draft_is_refused_as_not_this_threads_artifact(
    workflow: Workflow,
) -> None:
    assert workflow.run(workflow.task(OBJECTIVE), "donor").state == TaskState.COMPLETED
    donor = workflow.state("donor")
    task = workflow.task(OBJECTIVE, policies={"require_approval": True})
    assert workflow.run(task, "victim").state == TaskState.INPUT_REQUIRED
    workflow.graph.update_state(
        workflow.config("victim"),
        {"draft": donor["draft"], "review": donor["review"]},
        as_node=hands_review_on(workflow.wiring),
    )

    with pytest.raises(IntegrityError) as refused:
        workflow.resume("victim")

    assert "is not this thread's artifact" in str(refused.value), "the donor's draft or review"
    assert "donor-" in str(refused.value)
    assert not published(workflow, "victim")


def test_a_cited_claim_edited_after_approval_is_refused_before_publishing(
    workflow: Workflow,
) -> None:
    config = workflow.config("edited")
    list(
        workflow.graph.stream(
            {"task": workflow.task(OBJECTIVE)},
            config,
            context=workflow.context,
            durability="sync",
            interrupt_before=["finalize"],
        )
    )
    state = workflow.state("edited")
    assert state["review"].verdict == "approved"
    cited = state["draft"].cited_claim_ids[0]
    bundle: ResearchBundle = state["research"]
    facts = [quoting(fact, FORGED) if fact.id == cited else fact for fact in bundle.facts]
    workflow.graph.update_state(
        config,
        {"research": bundle.model_copy(update={"facts": facts})},
        as_node=hands_review_on(workflow.wiring),
    )

    with pytest.raises(ApprovalUnproven) as refused:
        workflow.resume("edited")

    assert f"quote of {cited} is not found verbatim" in refused.value.message
    assert not published(workflow, "edited")


def test_an_approved_thread_that_nobody_edited_is_published(workflow: Workflow) -> None:
    outcome = workflow.run(workflow.task(OBJECTIVE), "honest")
    review: ReviewResult = workflow.state("honest")["review"]
    assert outcome.state == TaskState.COMPLETED and published(workflow, "honest")
    assert review.draft_sha256 == workflow.state("honest")["draft"].body.sha256


@dataclass
class ApprovesAnything:
    """A replacement reviewer that approves whatever it is shown (its checks left out)."""

    real: Any

    def run(self, request: Any) -> AgentOutput[ReviewResult]:
        output: AgentOutput[ReviewResult] = self.real.run(request)
        approved = output.result.model_copy(
            update={"verdict": "approved", "rejected_claims": [], "required_changes": []}
        )
        return AgentOutput(approved, usage=output.usage, receipts=output.receipts)


def test_an_approved_draft_that_cites_no_claim_is_refused_and_nothing_is_published(
    workflow: Workflow,
) -> None:
    bare = SloppyWriter(bad_rounds=1, body="# Only a heading\n")
    context = workflow.context.with_agent("writer", bare)
    context = context.with_agent("reviewer", ApprovesAnything(context.agents["reviewer"]))
    with Workflow(workflow.settings, context=context) as careless:
        with pytest.raises(ApprovalUnproven, match="the draft cites no claim"):
            careless.run(OBJECTIVE, "t-uncited")
        assert not published(careless, "t-uncited")
