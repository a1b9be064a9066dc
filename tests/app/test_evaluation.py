"""The evaluation set: the offline agents keep every task, and the harness sees a lost one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.evaluation import (
    DEFAULT_CASES,
    Case,
    CaseResult,
    InvalidCases,
    _check_answerability,
    _check_article,
    evaluate,
    load_cases,
    table,
)
from app.settings import Settings
from app.workflow import Workflow
from contracts import Question, ResearchBundle
from tests.cli import handoff
from tests.conftest import OBJECTIVE


def test_the_set_has_the_cases_the_issue_asks_for() -> None:
    cases = [case for case, _ in load_cases()]
    assert len(cases) >= 12
    assert len({case.corpus for case in cases}) >= 3
    assert sum(len(case.unanswerable) for case in cases) >= 3
    assert sum(bool(case.required_sections) for case in cases) >= 3
    assert any("chinese" in case.corpus for case in cases)


def test_the_offline_agents_keep_every_task_of_the_set(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    results = evaluate(load_cases(), settings.with_overrides(model="offline", fault=None))
    assert [(r.case.id, r.defects) for r in results if r.defects] == []
    for result in results:
        unresolved = result.case.unanswerable or result.case.uncovered_sections
        assert result.status in (("paused", "partial") if unresolved else ("completed",))
    assert "0 defects" in table(results)


def test_handoff_eval_prints_the_table_and_exits_one_on_a_defect(tmp_path: Path) -> None:
    cases = json.loads(DEFAULT_CASES.read_text(encoding="utf-8"))
    [case] = [item for item in cases if item["id"] == "rosetta-three-scripts"]
    lying = {**case, "id": "claims-lunch-is-answerable", "questions": ["What did Young eat?"]}
    corpus = (DEFAULT_CASES.parent / case["corpus"]).resolve()
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{**lying, "corpus": str(corpus)}]), encoding="utf-8")
    result = handoff(
        "eval", "--cases", str(path), data_dir=tmp_path / "data", env={"HANDOFF_MODEL": "offline"}
    )
    assert result.returncode == 1, result.stderr
    assert "| claims-lunch-is-answerable | paused |" in result.stdout
    assert "answerable question left open: 'What did Young eat?'" in result.stdout


@pytest.mark.parametrize(
    ("change", "field"),
    [({"expect": "maybe"}, "expect"), ({"surprise": 1}, "surprise"), ({"corpus": ""}, "corpus")],
)
def test_a_bad_case_is_refused_naming_its_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    case = {"id": "c", "corpus": ".", "objective": OBJECTIVE, "expect": "completed", **change}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([case]), encoding="utf-8")
    with pytest.raises(InvalidCases, match=rf"case \[0\] field {field}"):
        load_cases(path)


def test_a_missing_corpus_and_a_repeated_id_are_refused(tmp_path: Path) -> None:
    case = {"id": "c", "corpus": "absent", "objective": OBJECTIVE, "expect": "completed"}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([case]), encoding="utf-8")
    with pytest.raises(InvalidCases, match="corpus 'absent' is not a folder"):
        load_cases(path)
    path.write_text(json.dumps([{**case, "corpus": "."}] * 2), encoding="utf-8")
    with pytest.raises(InvalidCases, match="case ids must be unique"):
        load_cases(path)


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
    _check_answerability(result, case, ResearchBundle(task_id="t", result_status="completed"))
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
    _check_answerability(result, case, opened)
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
    _check_article(result, case, bundle, broken, workflow.context.store)
    assert "non-prose code in the article" in result.defects
    assert "uncited sentence: 'The stone is pretty.'" in result.defects
    assert "required section 'Coptic' missing" in result.defects
    assert any(defect.endswith("over the limit of 20") for defect in result.defects)
    assert result.verbatim == result.cited > 0
    assert 0 < result.coverage < 1
