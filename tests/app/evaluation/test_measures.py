"""The harness sees a lost task: an answered unanswerable question, a lost section, code."""

from __future__ import annotations

from pathlib import Path

from app.evaluation.cases import Case
from app.evaluation.measures import CaseResult, check_answerability, check_article
from app.workflow import Workflow
from contracts import Question, ResearchBundle
from tests.app.agents.howto import CODE, QUESTION, Written, research_and_write
from tests.conftest import OBJECTIVE


def test_the_harness_sees_an_answered_unanswerable_question() -> None:
    case = Case(
        id="c",
        corpus=".",
        objective=OBJECTIVE,
        questions=["Lunch?"],
        unanswerable=["Lunch?"],
        expect="open",
    )
    result = CaseResult(case, status="completed")
    check_answerability(result, case, ResearchBundle(task_id="t", result_status="completed"))
    assert result.defects == [
        "unanswerable question treated as answered: 'Lunch?'",
        "a case with something unanswerable ended completed",
    ]
    opened = ResearchBundle(
        task_id="t",
        result_status="partial",
        open_questions=[Question(id="q-1", text=OBJECTIVE), Question(id="q-2", text="Lunch?")],
    )
    result = CaseResult(case, status="paused")
    check_answerability(result, case, opened)
    assert result.defects == [f"answerable question left open: {OBJECTIVE!r}"]


def test_the_harness_sees_a_lost_section_code_an_uncited_sentence_and_the_word_limit(
    workflow: Workflow,
) -> None:
    outcome = workflow.run(workflow.task(OBJECTIVE), "t-eval")
    bundle = workflow.state("t-eval")["research"]
    article = workflow.artifact("t-eval", "article").decode()
    case = Case(
        id="c",
        corpus=".",
        objective=OBJECTIVE,
        required_sections=["Coptic"],
        max_words=20,
        expect="completed",
    )
    broken = article.replace("\n\n", "\n\nThe stone is pretty.\n\n```\n$ make\n```\n\n", 1)
    result = CaseResult(case, status=outcome.result_status or "")
    check_article(result, case, bundle, broken, workflow.context.store)
    assert "non-prose code in the article" in result.defects
    assert "uncited sentence: 'The stone is pretty.'" in result.defects
    assert "required section 'Coptic' missing" in result.defects
    assert any(defect.endswith("over the limit of 20") for defect in result.defects)
    assert result.verbatim == result.cited > 0
    assert 0 < result.coverage < 1


def _measured(written: Written, body: str, bundle: ResearchBundle | None = None) -> list[str]:
    case = Case(id="c", corpus=".", objective=QUESTION, code_answers=[QUESTION], expect="completed")
    result = CaseResult(case, status="completed")
    check_article(result, case, bundle or written.bundle, body, written.store)
    return result.defects


def test_the_harness_sees_a_code_answer_shown_after_its_sentence(tmp_path: Path) -> None:
    written = research_and_write(tmp_path)
    assert _measured(written, written.body) == []


def test_the_harness_sees_a_code_answer_left_out_or_moved_away_from_its_sentence(
    tmp_path: Path,
) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    fence = f"```sh [{fact.id}]\n{CODE}\n```\n\n"
    left_out = written.body.replace(fence, "")
    assert _measured(written, left_out) == [
        f"{fact.id}: its code example is not shown after its sentence",
        f"no code example shown answers {QUESTION!r}",
    ]
    moved = left_out.replace("## Sources", fence + "## Sources")
    assert "non-prose code in the article" in _measured(written, moved)


def test_the_harness_sees_an_example_that_is_not_its_sources_code(tmp_path: Path) -> None:
    written = research_and_write(tmp_path)
    fact = written.introducing
    assert fact.example is not None
    forged = fact.example.model_copy(update={"code": "kiln wipe"})
    facts = [
        fact.model_copy(update={"example": forged}) if f is fact else f
        for f in written.bundle.facts
    ]
    bundle = written.bundle.model_copy(update={"facts": facts})
    body = written.body.replace(CODE, "kiln wipe")
    assert _measured(written, body, bundle) == [
        f"{fact.id}: its example shows other code than {fact.source_id} holds there"
    ]
