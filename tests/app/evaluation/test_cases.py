"""The evaluation set: the cases the issue asks for, and a bad cases file refused by field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.evaluation.cases import InvalidCases, load_cases
from app.exit_codes import ExitCode
from app.text.answer_types import asked_type
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE


def test_the_set_has_the_cases_the_issue_asks_for() -> None:
    cases = [case for case, _ in load_cases()]
    assert len(cases) >= 40
    assert len({case.corpus for case in cases}) >= 6
    unanswerable = [question for case in cases for question in case.unanswerable]
    assert len(unanswerable) >= 10
    typed = [question for question in unanswerable if asked_type(question) is not None]
    assert len(typed) >= 6, "subject present, asked number, year or person absent"
    assert sum(bool(case.required_sections) for case in cases) >= 3
    assert any("chinese" in case.corpus for case in cases)
    assert any(question.startswith("How do I") for case in cases for question in case.code_answers)


def test_a_code_answer_must_be_a_question_the_case_asks(tmp_path: Path) -> None:
    case = {
        "id": "c",
        "corpus": ".",
        "objective": OBJECTIVE,
        "questions": ["How do I read it?"],
        "code_answers": ["How do I read it?", "How do I carve it?"],
        "expect": "completed",
    }
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([case]), encoding="utf-8")
    with pytest.raises(
        InvalidCases, match=r"field code_answers: .*'How do I carve it\?' is neither"
    ):
        load_cases(path)


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


@pytest.mark.e2e
def test_a_case_file_nested_too_deep_for_the_parser_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    result = handoff("eval", "--cases", str(path), data_dir=tmp_path / "data")
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = one_line_error(result)
    assert str(path) in line and "nested too deeply" in line
