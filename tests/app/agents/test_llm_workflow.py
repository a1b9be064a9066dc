"""Model-backed agents end to end: scripted fake chat models, a real SQLite thread.

No network: every model is langchain-core's FakeMessagesListChatModel with scripted JSON
replies and usage metadata; the prompts it received are recorded and inspected.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any as Role
from typing import cast

import pytest
from langchain_core.language_models import BaseChatModel

from app.services import build_context
from app.workflow import Workflow
from contracts import DraftArticle, ErrorCode, NodeRun, ResearchBundle, ReviewResult, TaskState
from tests.app.agents.scripted import (
    APPROVE,
    ARTICLE,
    GROUNDED,
    MOON,
    claims,
    critique,
    draft,
    reply,
    scripted,
)
from tests.conftest import OBJECTIVE, passes

SECTIONS = {"required_sections": ["The Stone", "Decipherment"]}


@contextmanager
def with_models(workflow: Workflow, **models: BaseChatModel) -> Iterator[Workflow]:
    """The workflow, its agents given these chat models (through build_context)."""
    chosen = cast(dict[Role, BaseChatModel], models)
    context = build_context(workflow.settings, workflow.ledger, models=chosen)
    with Workflow(workflow.settings, context=context) as llm:
        yield llm


def runs_of(workflow: Workflow, thread: str, node: str) -> list[NodeRun]:
    return [run for run in workflow.history(thread) if run.node_id == node]


def test_happy_path_with_scripted_models_completes_and_records_tokens_per_node(
    workflow: Workflow,
) -> None:
    research, research_log = scripted(reply(claims(*GROUNDED), tokens=900))
    writer, writer_log = scripted(reply(draft(), tokens=700))
    reviewer, reviewer_log = scripted(reply(APPROVE, tokens=400))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        outcome = llm.run(llm.task(OBJECTIVE, constraints=SECTIONS), "t-llm")
        state = llm.state("t-llm")
    assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
    bundle: ResearchBundle = state["research"]
    assert [fact.id for fact in bundle.facts] == ["claim-1", "claim-2", "claim-3"]
    ResearchBundle.model_validate(bundle.model_dump(mode="json"))
    DraftArticle.model_validate(state["draft"].model_dump(mode="json"))
    review: ReviewResult = ReviewResult.model_validate(state["review"].model_dump(mode="json"))
    assert review.verdict == "approved"
    assert review.accepted_claims == ["claim-1", "claim-2", "claim-3"]
    article = workflow.artifact("t-llm", "article").decode()
    text, sources = article.split("\n## Sources\n")
    assert text == ARTICLE and "src-4" in sources, "the model's text, then the Sources list"
    tokens = {run.node_id: run.usage.tokens for run in workflow.history("t-llm")}
    assert {node: spent for node, spent in tokens.items() if spent} == {
        "research": 900,
        "writer": 700,
        "reviewer": 400,
    }, "each model's tokens are its own node's; nodes without a model spend none"
    assert [len(log.prompts) for log in (research_log, writer_log, reviewer_log)] == [1, 1, 1]


@pytest.mark.parametrize(
    ("replies", "research", "writer", "reviewer"),
    [
        pytest.param({}, None, None, None, id="offline"),
        pytest.param(
            {"research": claims(*GROUNDED), "writer": draft(), "reviewer": APPROVE},
            "LLMResearchAgent(FakeMessagesListChatModel)",
            "LLMWriterAgent(FakeMessagesListChatModel)",
            "LLMReviewerAgent(FakeMessagesListChatModel)",
            id="scripted-models",
        ),
    ],
)
def test_the_audit_names_the_implementation_and_model_behind_each_result(
    workflow: Workflow,
    replies: dict[str, object],
    research: str | None,
    writer: str | None,
    reviewer: str | None,
) -> None:
    """Offline, each node names the class the context holds (a project may swap one)."""
    models = {role: scripted(reply(payload))[0] for role, payload in replies.items()}
    with with_models(workflow, **models) as llm:
        assert llm.run(OBJECTIVE, "t-agents").result_status == "completed"
    named = {run.node_id: run.agent for run in workflow.history("t-agents")}
    given = {"research": research, "writer": writer, "reviewer": reviewer}
    declared = {spec.name: spec.agent for spec, _ in workflow.wiring}
    agents = {  # a node given no model (any a project adds) names its offline agent
        node: given.get(node) or type(workflow.context.agents[node]).__name__
        for node, protocol in declared.items()
        if protocol is not None
    }
    assert named == {node: agents.get(node) for node in named}
    assert {node for node in named if declared[node] is not None} == set(agents), (
        "a node that calls no agent names none"
    )


def test_a_hallucinated_quote_is_dropped_and_recorded_never_a_fact(workflow: Workflow) -> None:
    first, *later = GROUNDED  # the invented claim second: the claims after it still count
    research, _ = scripted(reply(claims(first, MOON, *later)))
    writer, _ = scripted(reply(draft()))
    reviewer, _ = scripted(reply(APPROVE))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        outcome = llm.run(OBJECTIVE, "t-moon")
        bundle: ResearchBundle = llm.state("t-moon")["research"]
    assert outcome.result_status == "completed"
    assert all("moon" not in fact.quote and "moon" not in fact.statement for fact in bundle.facts)
    assert len(bundle.facts) == 3 and bundle.result_status == "partial"
    [error] = bundle.errors
    assert (error.code, error.source_id) == (ErrorCode.QUOTE_NOT_FOUND, "src-4")
    assert "carried to the moon" in error.detail
    assert [e.code for e in outcome.errors] == [ErrorCode.QUOTE_NOT_FOUND], "the run reports it"
    for fact in bundle.facts:  # what did become a fact is verbatim at its span
        text = workflow.context.store.get(bundle.source(fact.source_id).snapshot).decode()
        assert text[fact.span.start : fact.span.end] == fact.quote


def test_a_draft_citing_a_missing_claim_is_not_approved_though_the_model_approves(
    workflow: Workflow,
) -> None:
    invented = ARTICLE + "\nThe stone was later carried to the moon [claim-99].\n"
    research, _ = scripted(reply(claims(*GROUNDED)))
    writer, writer_log = scripted(reply(draft(invented)), reply(draft()))
    reviewer, _ = scripted(reply(APPROVE), reply(APPROVE))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        outcome = llm.run(OBJECTIVE, "t-invented")
    assert outcome.result_status == "completed" and outcome.review_rounds == 2
    first, second = [
        ReviewResult.model_validate(
            json.loads(workflow.ledger.result("t-invented", "reviewer", run.input_hash) or "")[
                "review"
            ]
        )
        for run in runs_of(workflow, "t-invented", "reviewer")
    ]
    assert first.verdict == "changes_requested", "the model said approve; the checks did not"
    assert first.rejected_claims == ["claim-99"]
    assert ErrorCode.UNKNOWN_CLAIM in {change.code for change in first.required_changes}
    assert second.verdict == "approved"
    round_two = writer_log.texts()[1]
    assert "UNKNOWN_CLAIM (claim-99)" in round_two, "the writer is told what the checks found"
    assert "claim-99" in round_two.split("Never cite (rejected by review):")[1]
    assert "moon" not in workflow.artifact("t-invented", "article").decode()


def test_malformed_json_is_repaired_on_the_second_reply(workflow: Workflow) -> None:
    research, _ = scripted(reply(claims(*GROUNDED)))
    writer, writer_log = scripted(
        reply('{"markdown": "# Unfinished', tokens=300), reply(draft(), tokens=500)
    )
    reviewer, _ = scripted(reply(APPROVE))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        outcome = llm.run(OBJECTIVE, "t-repair")
    assert outcome.result_status == "completed"
    [run] = runs_of(workflow, "t-repair", "writer")
    assert run.status == "succeeded" and run.usage.tokens == 800, "the repair's tokens count"
    first, repair = writer_log.texts()
    assert "Invalid JSON" in repair and '{"markdown": "# Unfinished' in repair
    assert "[claim-1]" in first and "[claim-1]" not in repair, "schema + errors, no transcript"


def test_malformed_twice_ends_invalid_output_without_crashing_the_thread(
    workflow: Workflow,
) -> None:
    research, _ = scripted(reply(claims(*GROUNDED)))
    writer, writer_log = scripted(reply("Sure! Here is your article: # Rosetta"))
    reviewer, reviewer_log = scripted(reply(APPROVE))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        outcome = llm.run(llm.task(OBJECTIVE, budget={"max_attempts": 2}), "t-garbage")
        status = llm.status("t-garbage")
    assert (outcome.state, outcome.result_status) == (TaskState.FAILED, "failed")
    assert outcome.errors[0].code == ErrorCode.INVALID_OUTPUT
    assert "not a valid DraftReply after 1 repair" in outcome.errors[0].detail
    assert status.outcome == outcome and status.next_nodes == ()
    writers = runs_of(workflow, "t-garbage", "writer")
    assert [(run.status, run.error.kind if run.error else None) for run in writers] == [
        ("failed", "invalid_output"),
        ("failed", "invalid_output"),
    ], "one repair inside each attempt, one fresh attempt by the node runner"
    assert len(writer_log.prompts) == 4 and reviewer_log.prompts == []


def test_a_token_budget_smaller_than_the_usage_ends_the_run_budget_exhausted(
    workflow: Workflow,
) -> None:
    research, _ = scripted(reply(claims(*GROUNDED), tokens=1500))
    writer, writer_log = scripted(reply(draft()))
    reviewer, _ = scripted(reply(APPROVE))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        outcome = llm.run(llm.task(OBJECTIVE, budget={"max_tokens": 1000}), "t-tokens")
    assert (outcome.state, outcome.result_status) == (TaskState.FAILED, "failed")
    [error] = outcome.errors
    assert (error.code, error.field) == (ErrorCode.BUDGET_EXHAUSTED, "budget.max_tokens")
    assert "1500 of 1000 tokens used" in error.detail
    runs = workflow.history("t-tokens")
    nodes = [run.node_id for run in runs]
    path = ("research", "join_research")
    assert passes(nodes, *path) == [*path]
    research_run, join_run = (next(r for r in runs if r.node_id == n) for n in path)
    assert join_run.usage.tokens == 0 and research_run.usage.tokens == 1500
    stopped = runs[nodes.index("join_research") + 1]  # the writer, or a node put before it
    assert stopped.error and stopped.error.kind == "budget_exhausted"
    assert "writer" not in nodes[nodes.index(stopped.node_id) + 1 :], "nothing ran after it"
    assert writer_log.prompts == [], "no model call once the budget is spent"


def test_a_budget_spent_by_the_writer_ends_partial_with_the_draft(workflow: Workflow) -> None:
    research, _ = scripted(reply(claims(*GROUNDED), tokens=400))
    writer, _ = scripted(reply(draft(), tokens=400))
    reviewer, reviewer_log = scripted(reply(APPROVE))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        outcome = llm.run(llm.task(OBJECTIVE, budget={"max_tokens": 600}), "t-partial")
    assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "partial")
    assert outcome.errors[0].code == ErrorCode.BUDGET_EXHAUSTED and outcome.draft is not None
    assert reviewer_log.prompts == []


def test_prompt_sizes_stay_flat_across_five_review_rounds(workflow: Workflow) -> None:
    research, _ = scripted(reply(claims(*GROUNDED)))
    drafts = [ARTICLE.replace("# The Rosetta", f"# Round {n}: The Rosetta") for n in range(5)]
    writer, writer_log = scripted(*(reply(draft(text)) for text in drafts))
    asks = [
        "Open with why the stone mattered to scholars of the time.",
        "Say in the first section which three scripts the stone carries, in order.",
        "Mention the year 1822 in the Decipherment section's first sentence.",
        "Shorten the second sentence of the Decipherment section.",
        "Name both scholars in the Decipherment section.",
    ]
    reviewer, reviewer_log = scripted(*(reply(critique(text)) for text in asks))
    with with_models(workflow, research=research, writer=writer, reviewer=reviewer) as llm:
        task = llm.task(OBJECTIVE, constraints=SECTIONS, budget={"max_review_rounds": 5})
        outcome = llm.run(task, "t-rounds")
    assert outcome.result_status == "partial" and outcome.review_rounds == 5
    for log in (writer_log, reviewer_log):
        sizes = log.sizes()
        assert len(sizes) == 5
        assert max(sizes) <= 1.2 * sizes[0], sizes
    assert asks[3] in writer_log.texts()[4] and asks[2] not in writer_log.texts()[4], (
        "the writer sees the last review's changes only"
    )


def test_offline_stays_the_default(workflow: Workflow) -> None:
    from app.agents import OfflineResearchAgent, OfflineReviewerAgent, OfflineWriterAgent

    context = workflow.context
    assert isinstance(context.agents["research"], OfflineResearchAgent)
    assert isinstance(context.agents["writer"], OfflineWriterAgent)
    assert isinstance(context.agents["reviewer"], OfflineReviewerAgent)
    outcome = workflow.run(OBJECTIVE, "t-offline")
    assert outcome.result_status == "completed"
    assert all(run.usage.tokens == 0 for run in workflow.history("t-offline"))


def test_one_agent_can_use_a_model_while_the_others_stay_offline(workflow: Workflow) -> None:
    from app.agents import LLMReviewerAgent

    reviewer, reviewer_log = scripted(reply(APPROVE, tokens=50))
    context = workflow.context.with_agent("reviewer", LLMReviewerAgent(reviewer))
    with Workflow(workflow.settings, context=context) as mixed:
        outcome = mixed.run(OBJECTIVE, "t-mixed")
    assert outcome.result_status == "completed"
    spent = [(run.node_id, run.usage.tokens) for run in workflow.history("t-mixed")]
    assert [(node, tokens) for node, tokens in spent if tokens] == [("reviewer", 50)]
    assert len(reviewer_log.prompts) == 1
