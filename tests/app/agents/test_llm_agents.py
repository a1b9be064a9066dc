"""The model-backed agents one at a time: deterministic checks stand between model and facts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import Field

from app.agents import (
    LLMResearchAgent,
    LLMReviewerAgent,
    LLMWriterAgent,
    OfflineResearchAgent,
    prompt_inputs,
)
from app.agents.apparatus import apparatus
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.artifacts import FilesystemArtifactStore
from contracts import (
    Constraints,
    DraftArticle,
    ErrorCode,
    Handoff,
    RequiredChange,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    VersionedContract,
)
from graphs import ResearchRequest, ReviewRequest, StepInfo, WriteRequest
from graphs.agents import from_channel
from graphs.markdown import cited_claims
from graphs.tools import Toolbox, ToolEnv
from tests.app.agents.howto import CODE, HOWTO, QUESTION
from tests.app.agents.scripted import (
    APPROVE,
    ARTICLE,
    GROUNDED,
    LETTRE,
    MOON,
    STONE,
    YOUNG,
    calling,
    claims,
    critique,
    draft,
    reply,
    scripted,
    scripted_with_tools,
)
from tests.conftest import OBJECTIVE, write_corpus
from tests.extension_tools import ECHO

FIXED = datetime(2026, 1, 1, tzinfo=UTC)
TASK = TaskSpec(
    task_id="t",
    objective=OBJECTIVE,
    constraints={"max_words": 200, "required_sections": ["The Stone", "Decipherment"]},
)
HANDOFF = Handoff(
    task_id="t",
    task_version=1,
    objective=OBJECTIVE,
    from_node="research",
    next_allowed_action="writer",
    provenance={"producer": "research", "node": "research"},
)


def _step(node: str, tokens_left: int | None = None) -> StepInfo:
    return StepInfo(thread_id="t", node=node, step=1, task_version=1, tokens_left=tokens_left)


def _retrieval(corpus: Path = BUNDLED_CORPUS) -> OfflineResearchAgent:
    """Retrieval over ``corpus``, which is also where it may read."""
    policy = Settings(corpus_roots=[corpus]).corpus_policy()
    return OfflineResearchAgent(
        default_corpus=[corpus], clock=lambda: FIXED, policy=policy, max_facts=24
    )


def _research(
    store: FilesystemArtifactStore, *proposed: dict[str, str], task: TaskSpec = TASK
) -> tuple[ResearchBundle, int, list[str]]:
    model, log = scripted(reply(claims(*proposed), tokens=321))
    output = LLMResearchAgent(model, _retrieval(), max_passages=48).run(
        ResearchRequest(task, store, _step("research"))
    )
    return output.result, output.usage.tokens, log.texts()


def test_research_keeps_verified_claims_and_records_the_dropped_ones(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path)
    objective_only = TaskSpec(task_id="t", objective=OBJECTIVE)
    bundle, tokens, [prompt] = _research(store, STONE, MOON, LETTRE, task=objective_only)
    assert tokens == 321
    assert [(fact.id, fact.source_id) for fact in bundle.facts] == [
        ("claim-1", "src-4"),
        ("claim-2", "src-3"),
    ]
    for fact in bundle.facts:
        text = store.get(bundle.source(fact.source_id).snapshot).decode()  # type: ignore[union-attr]
        assert text[fact.span.start : fact.span.end] == fact.quote
        assert fact.provenance.node == "research" and fact.question_id == "q-1"
    assert bundle.facts[1].quote == LETTRE["quote"], "a partial sentence is a fine quote"
    assert bundle.result_status == "partial"
    assert [(error.code, error.source_id) for error in bundle.errors] == [
        (ErrorCode.QUOTE_NOT_FOUND, "src-4")
    ]
    notes = store.get(bundle.artifact_refs[0]).decode()
    assert "2. dropped (quote not found)" in notes and "3. kept as claim-2" in notes
    assert STONE["quote"] in prompt and "[src-4]" in prompt, "the model saw the passage"


def test_a_quote_from_another_source_or_not_shown_is_dropped(tmp_path: Path) -> None:
    wrong_source = {**STONE, "source_id": "src-2"}
    invented_source = {**STONE, "source_id": "src-99"}
    bundle, _, _ = _research(FilesystemArtifactStore(tmp_path), wrong_source, invented_source)
    assert bundle.facts == [] and bundle.result_status == "failed"
    assert [error.code for error in bundle.errors] == [
        ErrorCode.QUOTE_NOT_FOUND,
        ErrorCode.QUOTE_NOT_FOUND,
        ErrorCode.INSUFFICIENT_EVIDENCE,
    ]


def test_a_claim_that_says_more_than_its_quote_is_dropped(tmp_path: Path) -> None:
    embellished = {
        **YOUNG,
        "claim": "Napoleon personally ordered British spies to smuggle the slab to London.",
    }
    bundle, _, _ = _research(FilesystemArtifactStore(tmp_path), embellished, STONE)
    assert [fact.quote for fact in bundle.facts] == [STONE["quote"]]
    assert bundle.errors[0].code == ErrorCode.UNSUPPORTED_SENTENCE


def test_duplicate_quotes_become_one_fact(tmp_path: Path) -> None:
    again = {**STONE, "claim": "The stone carries one decree in three scripts."}
    bundle, _, _ = _research(FilesystemArtifactStore(tmp_path), STONE, again)
    assert len(bundle.facts) == 1 and bundle.errors == []
    assert bundle.result_status == "completed"


def test_whitespace_may_differ_but_the_fact_keeps_the_exact_source_text(tmp_path: Path) -> None:
    corpus = write_corpus(
        tmp_path / "bees",
        {"bees.md": "# Bees\n\nHoney bees perform the waggle dance\nnear the hive entrance.\n"},
    )
    task = TaskSpec(task_id="t", objective="Explain the honey bee waggle dance")
    proposed = {
        "claim": "Honey bees perform the waggle dance near the hive.",
        "source_id": "src-1",
        "quote": "Honey bees perform the waggle dance near the hive entrance.",
    }
    model, _ = scripted(reply(claims(proposed)))
    store = FilesystemArtifactStore(tmp_path / "store")
    agent = LLMResearchAgent(model, _retrieval(corpus))
    [fact] = agent.run(ResearchRequest(task, store, _step("research"))).result.facts
    assert fact.quote == "Honey bees perform the waggle dance\nnear the hive entrance."


def test_a_claim_quoting_a_sentence_that_introduces_a_code_example_carries_it(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path / "kiln", {"kiln.md": HOWTO})
    task = TaskSpec(task_id="t", objective=QUESTION)
    introducing = (
        "To start a kiln job on a folder of photos, run the kiln start command with the recipe name"
    )
    whole = {"claim": "Start a kiln job with kiln start.", "source_id": "src-1"}
    model, _ = scripted(reply(claims({**whole, "quote": introducing + ":"})))
    store = FilesystemArtifactStore(tmp_path / "store")
    research = LLMResearchAgent(model, _retrieval(corpus))
    [fact] = research.run(ResearchRequest(task, store, _step("research"))).result.facts
    assert fact.example is not None and fact.example.shown == CODE
    model, _ = scripted(reply(claims({**whole, "quote": introducing})))
    research = LLMResearchAgent(model, _retrieval(corpus))
    [part] = research.run(ResearchRequest(task, store, _step("research"))).result.facts
    assert part.example == fact.example, "quoted short of its colon, it still needs it"


def test_research_without_relevant_passages_asks_no_model(tmp_path: Path) -> None:
    model, log = scripted(reply(claims(STONE)))
    task = TaskSpec(task_id="t", objective="Describe quantum chromodynamics of gluons")
    agent = LLMResearchAgent(model, _retrieval())
    store = FilesystemArtifactStore(tmp_path)
    output = agent.run(ResearchRequest(task, store, _step("research")))
    assert output.result.result_status == "failed" and output.usage.tokens == 0
    assert log.prompts == []


def _bundle_and_draft(
    store: FilesystemArtifactStore, body: str, revision: int = 1
) -> tuple[ResearchBundle, DraftArticle]:
    bundle, _, _ = _research(store, *GROUNDED)
    body += "\n" + apparatus(bundle, [], cited_claims(body))  # as every writer ends a draft
    ref = store.put("t-draft", "draft", body.encode(), "text/markdown")
    draft_ = DraftArticle(
        task_id="t", result_status="completed", revision=revision, body=ref, word_count=50
    )
    return bundle, draft_


def _review(
    store: FilesystemArtifactStore, body: str, *replies: object
) -> tuple[ReviewResult, int, list[str]]:
    bundle, draft_ = _bundle_and_draft(store, body)
    model, log = scripted(*(reply(item, tokens=77) for item in replies))
    output = LLMReviewerAgent(model).run(
        ReviewRequest(TASK, HANDOFF, bundle, draft_, store, _step("reviewer"))
    )
    return output.result, output.usage.tokens, log.texts()


def test_the_model_cannot_approve_a_citation_of_a_missing_claim(tmp_path: Path) -> None:
    body = ARTICLE + "\nThe stone was carried to the moon in 1850 [claim-99].\n"
    review, tokens, [prompt] = _review(FilesystemArtifactStore(tmp_path), body, APPROVE)
    assert review.verdict == "changes_requested"
    assert review.rejected_claims == ["claim-99"]
    assert review.required_changes[0].code == ErrorCode.UNKNOWN_CLAIM
    assert tokens == 77
    assert "UNKNOWN_CLAIM (claim-99)" in prompt, "the model sees the deterministic findings"


def test_a_clean_draft_is_approved_only_when_the_model_approves_too(tmp_path: Path) -> None:
    approved, _, [prompt] = _review(FilesystemArtifactStore(tmp_path / "a"), ARTICLE, APPROVE)
    assert approved.verdict == "approved" and approved.required_changes == []
    assert "- none" in prompt and "Draft revision 1:" in prompt
    reason = "Say which scholar read the cartouches first."
    held, _, _ = _review(FilesystemArtifactStore(tmp_path / "b"), ARTICLE, critique(reason))
    assert held.verdict == "changes_requested"
    assert held.required_changes == [
        RequiredChange(code=ErrorCode.CONSTRAINT_VIOLATED, reason=f"reviewer: {reason}")
    ]
    assert held.accepted_claims == ["claim-1", "claim-2", "claim-3"]


def test_an_approval_with_changes_is_repaired_into_a_consistent_reply(tmp_path: Path) -> None:
    confused = {"verdict": "approve", "changes": [{"reason": "Tighten the title."}]}
    review, tokens, prompts = _review(
        FilesystemArtifactStore(tmp_path), ARTICLE, confused, critique("Tighten the title.")
    )
    assert review.verdict == "changes_requested" and tokens == 154
    assert "must come with an empty changes list" in prompts[1]


def test_the_writer_prompt_holds_contracts_only(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path)
    bundle, first = _bundle_and_draft(store, "# Old draft\n\nSOMETHING-FROM-ROUND-ONE [claim-2].\n")
    first = first.model_copy(update={"excluded_claim_ids": ["claim-3"]})
    review = ReviewResult(
        task_id="t",
        draft_revision=1,
        verdict="changes_requested",
        rejected_claims=["claim-1"],
        required_changes=[
            RequiredChange(code=ErrorCode.MISSING_SECTION, reason="add it", section="The Stone")
        ],
    )
    only_two = ARTICLE.replace("[claim-1]", "[claim-2]").replace("[claim-3]", "[claim-2]")
    model, log = scripted(reply(draft(only_two), tokens=55))
    output = LLMWriterAgent(model).run(
        WriteRequest(TASK, HANDOFF, bundle, first, review, store, _step("writer"))
    )
    [prompt] = log.texts()
    assert "SOMETHING-FROM-ROUND-ONE" not in prompt, "no earlier draft"
    assert "[claim-2]" in prompt and "[claim-1] " not in prompt and "[claim-3] " not in prompt
    assert "Never cite (rejected by review): claim-1, claim-3" in prompt
    assert "MISSING_SECTION (The Stone): add it" in prompt
    assert "at most 200 words" in prompt and "The Stone; Decipherment" in prompt
    result = output.result
    assert (result.revision, output.usage.tokens) == (2, 55)
    assert result.cited_claim_ids == ["claim-2"]
    assert result.excluded_claim_ids == ["claim-1", "claim-3"]
    assert result.addressed_changes == ["MISSING_SECTION:The Stone"]
    body = store.get(result.body).decode()
    text, sources = body.split("\n## Sources\n")
    assert text == only_two, "the model's text is kept as written"
    assert sources.strip().startswith("- src-4:") and "claim-2" in sources, "then the Sources"


def test_a_writer_without_usable_facts_asks_no_model(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path)
    bundle, first = _bundle_and_draft(store, ARTICLE)
    review = ReviewResult(
        task_id="t",
        draft_revision=1,
        verdict="changes_requested",
        rejected_claims=["claim-1", "claim-2", "claim-3"],
    )
    model, log = scripted(reply(draft()))
    output = LLMWriterAgent(model).run(
        WriteRequest(TASK, HANDOFF, bundle, first, review, store, _step("writer"))
    )
    assert output.result.result_status == "failed" and log.prompts == []


class Outline(VersionedContract):
    """The sections an article follows."""

    sections: list[str] = Field(description="Section titles the article follows, in order")
    audience: str | None = Field(default=None, description="Who the article is written for")


@dataclass(frozen=True)
class OutlinedWriteRequest(WriteRequest):
    """A writer's request with one input more, as a template user would add it."""

    outline: Outline | None = field(default=None, metadata=from_channel("outline"))


def _first_draft_prompt(
    tmp_path: Path, request: Callable[[ResearchBundle, FilesystemArtifactStore], WriteRequest]
) -> str:
    """The one prompt a model writer sends for a first draft, asked by ``request``."""
    store = FilesystemArtifactStore(tmp_path)
    bundle, _ = _bundle_and_draft(store, "# Old draft\n\nText [claim-2].\n")
    model, log = scripted(reply(draft(ARTICLE), tokens=5))
    LLMWriterAgent(model).run(request(bundle, store))
    [prompt] = log.texts()
    return prompt


def test_a_new_request_field_reaches_the_writer_prompt_under_its_descriptions(
    tmp_path: Path,
) -> None:
    outline = Outline(sections=["Finding the stone", "Reading it"], audience="museum visitors")
    prompt = _first_draft_prompt(
        tmp_path,
        lambda bundle, store: OutlinedWriteRequest(
            TASK, HANDOFF, bundle, None, None, store, _step("writer"), outline=outline
        ),
    )
    assert "outline (The sections an article follows.):" in prompt
    assert (
        '- Section titles the article follows, in order: ["Finding the stone", "Reading it"]'
        in (prompt)
    )
    assert "- Who the article is written for: museum visitors" in prompt


def test_a_prompt_that_lays_out_a_field_the_request_lacks_fails_at_once() -> None:
    with pytest.raises(TypeError, match=r"WriteRequest has no state fields \['outline'\]"):
        prompt_inputs.laid_out(WriteRequest, "task", "outline")


def test_an_input_another_node_declared_the_writer_reads_reaches_its_prompt(
    tmp_path: Path,
) -> None:
    outline = Outline(sections=["Finding the stone"], audience="museum visitors")
    prompt = _first_draft_prompt(
        tmp_path,
        lambda bundle, store: WriteRequest(
            TASK, HANDOFF, bundle, None, None, store, _step("writer"), inputs={"outline": outline}
        ),
    )
    assert "outline (The sections an article follows.):" in prompt
    assert "- Who the article is written for: museum visitors" in prompt


class AudienceConstraints(Constraints):
    """The task's constraints with one field more, as a template user would add it."""

    audience: str | None = Field(default=None, description="Who the article is written for")


def test_a_constraint_added_to_the_contract_reaches_the_writer_prompt(tmp_path: Path) -> None:
    constraints = AudienceConstraints(max_words=200, audience="museum visitors")
    task = TASK.model_copy(update={"constraints": constraints})
    prompt = _first_draft_prompt(
        tmp_path,
        lambda bundle, store: WriteRequest(
            task, HANDOFF, bundle, None, None, store, _step("writer")
        ),
    )
    assert "- at most 200 words in the body" in prompt
    assert "- Who the article is written for: museum visitors" in prompt


def test_the_model_backed_writer_and_reviewer_offer_their_node_s_tools_to_their_model(
    tmp_path: Path,
) -> None:
    store = FilesystemArtifactStore(tmp_path)
    bundle, draft_ = _bundle_and_draft(store, ARTICLE)

    def toolbox(node: str) -> Toolbox:
        env = ToolEnv(store=store, step=_step(node), clock=lambda: FIXED)
        return Toolbox(node=node, tools=(ECHO,), env=env)

    asks = calling(("echo", {"text": "ok"}))
    writing, reviewing = toolbox("writer"), toolbox("reviewer")
    writer_model, _ = scripted_with_tools(asks, reply(draft(ARTICLE)))
    LLMWriterAgent(writer_model).run(
        WriteRequest(TASK, HANDOFF, bundle, None, None, store, _step("writer"), tools=writing)
    )
    reviewer_model, _ = scripted_with_tools(asks, reply(APPROVE))
    LLMReviewerAgent(reviewer_model).run(
        ReviewRequest(TASK, HANDOFF, bundle, draft_, store, _step("reviewer"), tools=reviewing)
    )
    for model, tools in ((writer_model, writing), (reviewer_model, reviewing)):
        assert [tool["function"]["name"] for tool in model.offered] == ["echo"]
        assert [(receipt.tool, receipt.error) for receipt in tools.receipts] == [("echo", None)]
