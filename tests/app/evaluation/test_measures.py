"""The harness sees a lost task: an answered unanswerable question, a lost section, code."""

from __future__ import annotations

from app.evaluation.cases import Case
from app.evaluation.measures import CaseResult, check_answerability, check_article
from app.workflow import Workflow
from contracts import Question, ResearchBundle
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
