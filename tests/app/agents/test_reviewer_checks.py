"""Each Reviewer check: a stand-in writer makes exactly that defect, every round; the review
requests the change with its code, and once the rounds are spent the run ends partial
naming it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.language_models import BaseChatModel

from app.agents import OfflineReviewerAgent, OfflineWriterAgent
from app.agents.apparatus import apparatus, without_apparatus
from app.agents.reviewer import Findings
from app.services import build_context
from app.storage.artifacts import FilesystemArtifactStore
from app.text.primitives import CITATION, cite
from app.text.relevance import fact_context, on_topic
from app.workflow import Workflow
from contracts import (
    DraftArticle,
    ErrorCode,
    Fact,
    ResearchBundle,
    ReviewResult,
    Span,
    TaskSpec,
    TaskState,
)
from graphs import AgentOutput, WriteRequest
from graphs.markdown import cited_claims, word_count
from tests.app.agents.howto import CODE, Written, research_and_write
from tests.app.agents.scripted import draft, reply, scripted
from tests.conftest import OBJECTIVE, stored_source, write_corpus

Defect = Callable[[str, WriteRequest], str]


@dataclass
class DefectWriter:
    """The offline writer's draft, with one defect made to it every round."""

    defect: Defect
    real: OfflineWriterAgent = field(default_factory=OfflineWriterAgent)
    reviews: list[ReviewResult] = field(default_factory=list)

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        if request.review is not None:
            self.reviews.append(request.review)
        draft = self.real.run(request).result
        body = self.defect(request.store.get(draft.body).decode(), request)
        ref = request.store.put(
            request.step.artifact_id("draft"), "draft", body.encode(), "text/markdown"
        )
        changed = {
            "body": ref,
            "cited_claim_ids": cited_claims(body),
            "word_count": word_count(body),
        }
        return AgentOutput(draft.model_copy(update=changed))


def relisted(text: str, request: WriteRequest) -> str:
    """A body with its apparatus rebuilt for the claims it now cites."""
    return text + "\n" + apparatus(request.bundle, [], cited_claims(text))


def sections(body: str) -> tuple[str, dict[str, str]]:
    """The text before the first ``##`` heading, and each section's text by title."""
    parts = re.split(r"^## (.+)\n", body, flags=re.M)
    return parts[0], dict(zip(parts[1::2], parts[2::2], strict=True))


def rebuild(opening: str, by_title: dict[str, str]) -> str:
    return opening + "".join(f"## {title}\n{text}" for title, text in by_title.items())


def empty_heading(body: str, request: WriteRequest) -> str:
    """A heading with nothing under it, of a section no task asked for."""
    return relisted(without_apparatus(body).rstrip() + "\n\n## Further reading\n", request)


def answer_moved_down(body: str, request: WriteRequest) -> str:
    """The opening paragraph, the objective's answer, moved under a last heading."""
    opening, by_title = sections(without_apparatus(body))
    title, answer = opening.strip().split("\n", 1)
    by_title["Further detail"] = f"\n{answer.strip()}\n\n"
    return relisted(rebuild(title + "\n\n", by_title), request)


def rename_section(body: str, request: WriteRequest) -> str:
    return body.replace("## The Stone\n", "## A stone\n")


def empty_section(body: str, request: WriteRequest) -> str:
    opening, by_title = sections(without_apparatus(body))
    moved = by_title["The Stone"].strip()
    by_title["The Stone"] = "\n"
    return relisted(rebuild(opening.rstrip() + "\n\n" + moved + "\n\n", by_title), request)


def off_topic_section(body: str, request: WriteRequest) -> str:
    [title] = request.task.constraints.required_sections
    opening, by_title = sections(without_apparatus(body))
    other = next(
        fact
        for fact in request.bundle.facts
        if fact.leans_on is None and not on_topic(title, fact_context(fact, request.bundle))
    )
    moved = by_title[title].strip()
    by_title[title] = f"\n{cite(other.statement, other.id)}\n\n"
    return relisted(rebuild(opening.rstrip() + "\n\n" + moved + "\n\n", by_title), request)


def over_the_limit(body: str, request: WriteRequest) -> str:
    text = without_apparatus(body).rstrip() + "\n\n"
    cited = set(cited_claims(body))
    extra = [fact for fact in request.bundle.facts if fact.id not in cited and not fact.leans_on]
    limit = request.task.constraints.max_words or 0
    while word_count(text) <= limit:
        fact = extra.pop(0)
        text += cite(fact.statement, fact.id) + "\n\n"
    return relisted(text, request)


def unlisted_open_question(body: str, request: WriteRequest) -> str:
    return relisted(without_apparatus(body), request)  # Sources only, no Open questions


def code_block(body: str, request: WriteRequest) -> str:
    return body.replace("\n\n", "\n\n```bash\n$ pip install rosetta\n```\n\n", 1)


def uncited_sentence(body: str, request: WriteRequest) -> str:
    first = next(match for match in CITATION.finditer(body))
    end = body.index("\n", first.end())
    return body[:end] + " Everyone agrees the stone is pretty." + body[end:]


def no_sources_list(body: str, request: WriteRequest) -> str:
    return without_apparatus(body)


def empty_article(body: str, request: WriteRequest) -> str:
    return body.splitlines()[0] + "\n"


def dangling_opening(body: str, request: WriteRequest) -> str:
    leaning = next(fact for fact in request.bundle.facts if fact.leans_on)
    text = without_apparatus(body).replace(cite(leaning.statement, leaning.id), "")
    title, rest = text.split("\n", 1)
    return relisted(f"{title}\n\n{cite(leaning.statement, leaning.id)}\n{rest}", request)


def prose_in_sources(body: str, request: WriteRequest) -> str:
    """A claim no fact makes, hidden in the Sources list where prose is not checked."""
    return body.rstrip() + "\n- The Rosetta Stone was carved by aliens in 1999.\n"


YOUNG = (
    "# Thomas Young\n\nThomas Young studied the Rosetta Stone from 1814 onward. "
    "He identified the cartouche of Ptolemy in the hieroglyphic text of the stone.\n"
)
CASES: list[tuple[ErrorCode, Defect, dict[str, Any]]] = [
    (ErrorCode.MISSING_SECTION, rename_section, {"required_sections": ["The Stone"]}),
    (ErrorCode.EMPTY_SECTION, empty_section, {"required_sections": ["The Stone"]}),
    (ErrorCode.EMPTY_SECTION, empty_heading, {}),
    (ErrorCode.NO_DIRECT_ANSWER, answer_moved_down, {}),
    (ErrorCode.OFF_TOPIC_SECTION, off_topic_section, {"required_sections": ["Coptic"]}),
    (ErrorCode.CONSTRAINT_VIOLATED, over_the_limit, {"max_words": 80}),
    (ErrorCode.QUESTION_NOT_ADDRESSED, unlisted_open_question, {}),
    (ErrorCode.NON_PROSE_QUOTED, code_block, {}),
    (ErrorCode.UNCITED_SENTENCE, uncited_sentence, {}),
    (ErrorCode.SOURCE_NOT_LISTED, no_sources_list, {}),
    (ErrorCode.EMPTY_ARTICLE, empty_article, {}),
    (ErrorCode.DANGLING_REFERENCE, dangling_opening, {}),
    (ErrorCode.APPARATUS_ALTERED, prose_in_sources, {}),
]


@pytest.mark.parametrize(
    ("code", "defect", "constraints"), CASES, ids=[defect.__name__ for _, defect, _ in CASES]
)
def test_a_defect_is_requested_by_its_code_and_ends_the_run_partial_naming_it(
    tmp_path: Path,
    workflow: Workflow,
    code: ErrorCode,
    defect: Defect,
    constraints: dict[str, Any],
) -> None:
    writer = DefectWriter(defect)
    fields: dict[str, Any] = {"constraints": constraints, "budget": {"max_review_rounds": 2}}
    objective = OBJECTIVE
    if code == ErrorCode.QUESTION_NOT_ADDRESSED:
        fields["questions"] = ["What did Champollion eat for lunch?"]
    if code == ErrorCode.DANGLING_REFERENCE:
        fields["corpus"] = [str(write_corpus(tmp_path / "young", {"young.md": YOUNG}))]
        objective = "Explain how Thomas Young identified the cartouche of Ptolemy"
    context = workflow.context.with_agent("writer", writer)
    with Workflow(workflow.settings, context=context) as stand_in:
        outcome = stand_in.run(stand_in.task(objective, **fields), "t-defect")
        if outcome.state == TaskState.INPUT_REQUIRED:  # the lunch question stays open
            request = stand_in.pending("t-defect")
            assert request is not None and request.open_questions
            decision = {"interrupt_id": request.interrupt_id, "action": "approve"}
            outcome = stand_in.resume("t-defect", decision)
    [review] = writer.reviews
    assert review.verdict == "changes_requested"
    assert {change.code for change in review.required_changes} == {code}
    assert outcome.state == TaskState.COMPLETED and outcome.result_status == "partial"
    assert outcome.reason == "the draft was not approved within the review-round budget"
    assert code in {error.code for error in outcome.errors}


def test_the_offline_writer_passes_every_check_on_the_same_tasks(workflow: Workflow) -> None:
    task = workflow.task(
        OBJECTIVE, constraints={"required_sections": ["The Stone"], "max_words": 120}
    )
    outcome = workflow.run(task, "t-clean")
    assert outcome.result_status == "completed" and outcome.review_rounds == 1


def test_a_cited_quote_from_a_table_row_is_rejected_as_non_prose(tmp_path: Path) -> None:
    text = (
        "# Settings\n\nThe worker reads its settings at start.\n\n"
        "| name | default |\n|---|---|\n| FERRULE_DB | ferrule.db |\n"
    )
    store = FilesystemArtifactStore(tmp_path)
    source = stored_source(store, "settings.md", "Settings", text)
    row = "| FERRULE_DB | ferrule.db |"
    start = text.index(row)
    fact = Fact(
        id="claim-1",
        source_id="src-1",
        quote=row,
        span=Span(start=start, end=start + len(row)),
        confidence="low",
        provenance={"producer": "research", "node": "research"},
    )
    bundle = ResearchBundle(task_id="t", result_status="completed", facts=[fact], sources=[source])
    task = TaskSpec(task_id="t", objective="Describe the worker settings")
    body = "# Settings\n\nFERRULE_DB defaults to ferrule.db [claim-1].\n\n" + apparatus(
        bundle, [], ["claim-1"]
    )
    ref = store.put("t-draft", "draft", body.encode(), "text/markdown")
    draft = DraftArticle(
        task_id="t", result_status="completed", revision=1, body=ref, word_count=word_count(body)
    )
    findings = OfflineReviewerAgent().check(task, bundle, draft, store)
    codes = {change.code for change in findings.changes}
    assert ErrorCode.NON_PROSE_QUOTED in codes
    assert findings.rejected == ["claim-1"] and findings.accepted == []


def _review(written: Written, body: str, bundle: ResearchBundle | None = None) -> Findings:
    """The offline checks of ``body`` as the draft, against ``bundle`` (research's, else)."""
    ref = written.store.put("t-draft-changed", "draft", body.encode(), "text/markdown")
    draft = written.draft.model_copy(update={"body": ref})
    return OfflineReviewerAgent().check(
        written.task, bundle or written.bundle, draft, written.store
    )


def _codes(findings: Findings) -> list[tuple[ErrorCode, str | None]]:
    return [(change.code, change.claim_id) for change in findings.changes]


def test_an_example_shown_right_after_its_sentence_passes_every_check(tmp_path: Path) -> None:
    written = research_and_write(tmp_path)
    findings = _review(written, written.body)
    assert findings.changes == []
    assert written.introducing.id in findings.accepted


def test_a_sentence_whose_example_is_left_out_is_a_dangling_reference(tmp_path: Path) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    body = written.body.replace(f"```sh [{fact.id}]\n{CODE}\n```\n\n", "")
    assert "```" not in body
    assert _codes(_review(written, body)) == [(ErrorCode.DANGLING_REFERENCE, fact.id)]


def test_an_example_shown_with_other_code_than_its_source_is_no_verbatim_quote(
    tmp_path: Path,
) -> None:
    written = research_and_write(tmp_path)
    body = written.body.replace("./photos\nkiln status", "./photos\nkiln stop")
    findings = _review(written, body)
    assert _codes(findings) == [(ErrorCode.QUOTE_NOT_FOUND, written.introducing.id)]


def test_an_example_away_from_its_sentence_is_code_in_the_article(tmp_path: Path) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    fence = f"```sh [{fact.id}]\n{CODE}\n```\n\n"
    body = written.body.replace(fence, "").replace("## Sources", fence + "## Sources")
    findings = _review(written, body)
    assert sorted(_codes(findings)) == [
        (ErrorCode.DANGLING_REFERENCE, fact.id),
        (ErrorCode.NON_PROSE_QUOTED, None),
    ]


def test_a_fact_whose_example_is_not_the_code_its_sentence_introduces_is_rejected(
    tmp_path: Path,
) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    assert fact.example is not None
    forged = fact.example.model_copy(update={"code": "kiln start --recipe wipe-disk /"})
    bundle = _with_fact(written.bundle, fact.model_copy(update={"example": forged}))
    body = written.body.replace(CODE, "kiln start --recipe wipe-disk /")
    findings = _review(written, body, bundle)
    assert _codes(findings) == [(ErrorCode.QUOTE_NOT_FOUND, fact.id)]
    assert fact.id in findings.rejected


def test_a_fact_that_introduces_an_example_it_does_not_carry_is_rejected(tmp_path: Path) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    bundle = _with_fact(written.bundle, fact.model_copy(update={"example": None}))
    body = written.body.replace(f"```sh [{fact.id}]\n{CODE}\n```\n\n", "")
    findings = _review(written, body, bundle)
    assert _codes(findings) == [(ErrorCode.DANGLING_REFERENCE, fact.id)]
    assert "introduces a code example" in findings.changes[0].reason
    assert fact.id in findings.rejected


def test_a_line_of_the_example_quoted_as_a_sentence_is_non_prose(tmp_path: Path) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    assert fact.example is not None
    start = fact.example.span.start + fact.example.text.index("kiln status")
    line = fact.model_copy(
        update={
            "quote": "kiln status",
            "claim": None,
            "span": Span(start=start, end=start + len("kiln status")),
            "example": None,
        }
    )
    bundle = _with_fact(written.bundle, line)
    body = written.body.replace(f"```sh [{fact.id}]\n{CODE}\n```\n\n", "")
    findings = _review(written, body, bundle)
    assert (ErrorCode.NON_PROSE_QUOTED, fact.id) in _codes(findings)
    assert fact.id in findings.rejected


def _with_fact(bundle: ResearchBundle, fact: Fact) -> ResearchBundle:
    facts = [fact if item.id == fact.id else item for item in bundle.facts]
    return bundle.model_copy(update={"facts": facts})


KILN_RELEASE = """\
# kiln

kiln is a small tool that runs batch jobs on folders of images.
kiln was first released as a command line tool for batch image jobs.
"""
YEAR_QUESTION = "In which year was kiln first released?"


@dataclass
class ReworkedResearch:
    """Research as a model might do it: the offline bundle, reworked by ``rework``."""

    real: Any
    rework: Callable[[ResearchBundle], ResearchBundle]

    def fingerprint(self, task: TaskSpec) -> str:
        return str(self.real.fingerprint(task))

    def run(self, request: Any) -> AgentOutput[ResearchBundle]:
        output = self.real.run(request)
        return AgentOutput(self.rework(output.result), output.usage, output.receipts)


def links_an_undated_fact(bundle: ResearchBundle) -> ResearchBundle:
    """The year question (q-2) linked to a fact with no year."""
    facts = [
        fact.model_copy(update={"also_answers": [*fact.also_answers, "q-2"]})
        if "first released" in fact.quote and "q-2" not in fact.answers
        else fact
        for fact in bundle.facts
    ]
    still_open = [question for question in bundle.open_questions if question.id != "q-2"]
    status = "completed" if facts else bundle.result_status
    changed = {"facts": facts, "open_questions": still_open, "result_status": status}
    return bundle.model_copy(update=changed)


def test_a_question_answered_by_a_fact_of_the_wrong_kind_is_a_wrong_answer_type(
    tmp_path: Path, workflow: Workflow
) -> None:
    corpus = write_corpus(tmp_path / "kiln", {"kiln.md": KILN_RELEASE})
    research = ReworkedResearch(workflow.context.agents["research"], links_an_undated_fact)
    writer = DefectWriter(lambda body, request: body)
    context = workflow.context.with_agent("research", research).with_agent("writer", writer)
    with Workflow(workflow.settings, context=context) as stand_in:
        task = stand_in.task(
            "Explain what kiln is",
            questions=[YEAR_QUESTION],
            corpus=[str(corpus)],
            budget={"max_review_rounds": 2},
        )
        outcome = stand_in.run(task, "t-year")
    [review] = writer.reviews
    assert {change.code for change in review.required_changes} == {ErrorCode.WRONG_ANSWER_TYPE}
    assert "asks for a year" in review.required_changes[0].reason
    assert outcome.result_status == "partial"
    assert ErrorCode.WRONG_ANSWER_TYPE in {error.code for error in outcome.errors}


def claims_a_pointer(bundle: ResearchBundle) -> ResearchBundle:
    """One fact's claim reworded into a pointer elsewhere."""
    for fact in bundle.facts:
        if fact.leans_on is None and "Rosetta Stone" in fact.quote:
            return _with_fact(bundle, fact.model_copy(update={"claim": "See the Rosetta Stone."}))
    return bundle


def test_a_cited_fact_that_is_a_pointer_elsewhere_is_a_fragment(workflow: Workflow) -> None:
    research = ReworkedResearch(workflow.context.agents["research"], claims_a_pointer)
    writer = DefectWriter(lambda body, request: body)
    context = workflow.context.with_agent("research", research).with_agent("writer", writer)
    with Workflow(workflow.settings, context=context) as stand_in:
        task = stand_in.task(OBJECTIVE, budget={"max_review_rounds": 2})
        outcome = stand_in.run(task, "t-pointer")
    [review] = writer.reviews
    assert {change.code for change in review.required_changes} == {ErrorCode.FRAGMENT}
    assert "points elsewhere" in review.required_changes[0].reason
    assert outcome.result_status == "partial"


HARBOUR = "# Harbour notes\n\nThe harbour ferry leaves the north pier every hour in summer.\n"
ASIDE = "The harbour ferry leaves the north pier every hour in summer."


def adds_an_aside(bundle: ResearchBundle) -> ResearchBundle:
    """A fact quoting a sentence of the corpus that no question is about."""
    [source] = [source for source in bundle.sources if source.uri.endswith("harbour.md")]
    start = HARBOUR.index(ASIDE)
    aside = Fact(
        id="claim-9001",
        source_id=source.id,
        quote=ASIDE,
        span=Span(start=start, end=start + len(ASIDE)),
        confidence="low",
        provenance={"producer": "research", "node": "research"},
    )
    return bundle.model_copy(update={"facts": [*bundle.facts, aside]})


def cites_the_aside(body: str, request: WriteRequest) -> str:
    """The aside cited at the end of the opening paragraph, where room is left for it."""
    assert "claim-9001" not in body, "the offline writer leaves an aside out"
    title, opening, rest = without_apparatus(body).split("\n\n", 2)
    return relisted(f"{title}\n\n{opening} {cite(ASIDE, 'claim-9001')}\n\n{rest}", request)


def test_a_cited_sentence_relevant_to_no_question_is_off_topic(
    tmp_path: Path, workflow: Workflow
) -> None:
    corpus = write_corpus(tmp_path / "kiln", {"kiln.md": KILN_RELEASE, "harbour.md": HARBOUR})
    research = ReworkedResearch(workflow.context.agents["research"], adds_an_aside)
    writer = DefectWriter(cites_the_aside)
    context = workflow.context.with_agent("research", research).with_agent("writer", writer)
    with Workflow(workflow.settings, context=context) as stand_in:
        task = stand_in.task(
            "Explain what kiln is", corpus=[str(corpus)], budget={"max_review_rounds": 2}
        )
        outcome = stand_in.run(task, "t-aside")
    [review] = writer.reviews
    assert [(change.code, change.claim_id) for change in review.required_changes] == [
        (ErrorCode.OFF_TOPIC_SENTENCE, "claim-9001")
    ]
    assert "relevant to no question" in review.required_changes[0].reason
    assert outcome.result_status == "partial"
    assert ErrorCode.OFF_TOPIC_SENTENCE in {error.code for error in outcome.errors}


def test_the_offline_writer_leaves_out_a_fact_relevant_to_no_question(
    tmp_path: Path, workflow: Workflow
) -> None:
    corpus = write_corpus(tmp_path / "kiln", {"kiln.md": KILN_RELEASE, "harbour.md": HARBOUR})
    research = ReworkedResearch(workflow.context.agents["research"], adds_an_aside)
    context = workflow.context.with_agent("research", research)
    with Workflow(workflow.settings, context=context) as stand_in:
        task = stand_in.task("Explain what kiln is", corpus=[str(corpus)])
        outcome = stand_in.run(task, "t-no-aside")
        article = stand_in.artifact("t-no-aside", "article").decode()
    assert outcome.result_status == "completed" and outcome.review_rounds == 1
    assert "harbour" not in article.split("## Sources")[0]


def test_a_model_writer_is_never_shown_a_fact_relevant_to_no_question(
    tmp_path: Path, workflow: Workflow
) -> None:
    corpus = write_corpus(tmp_path / "kiln", {"kiln.md": KILN_RELEASE, "harbour.md": HARBOUR})
    research = ReworkedResearch(workflow.context.agents["research"], adds_an_aside)
    article = draft("# kiln\n\nkiln is a small tool that runs batch jobs on folders of images.\n")
    model, log = scripted(*(reply(article) for _ in range(3)))
    models = cast(dict[Any, BaseChatModel], {"writer": model})
    context = build_context(workflow.settings, workflow.ledger, models=models)
    with Workflow(workflow.settings, context=context.with_agent("research", research)) as llm:
        llm.run(llm.task("Explain what kiln is", corpus=[str(corpus)]), "t-model-aside")
        bundle = llm.state("t-model-aside")["research"]
    assert "claim-9001" in {fact.id for fact in bundle.facts}, "research handed the aside on"
    assert log.texts() and not any("harbour" in text for text in log.texts())
