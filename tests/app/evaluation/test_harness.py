"""The offline agents keep every task of the set, and ``handoff eval`` exits 1 on a defect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.evaluation import DEFAULT_CASES, evaluate, load_cases, table
from app.evaluation.gold import by_corpus
from app.evaluation.report import MIN_RECALL, answer_verdicts
from app.settings import Settings
from graphs.errors import ExitCode
from tests.cli import handoff, one_line_error


@pytest.mark.slow
def test_the_offline_agents_keep_every_task_of_the_set(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    results = evaluate(load_cases(), settings.with_overrides(model="offline", fault=None))
    assert [(r.case.id, r.defects) for r in results if r.defects] == []
    for result in results:
        unresolved = result.case.unanswerable or result.case.uncovered_sections
        assert result.status in (("paused", "partial") if unresolved else ("completed",))
    assert "0 defects" in table(results)


@pytest.mark.slow
def test_the_offline_articles_cite_the_gold_answers_and_the_table_sets_them_beside_bm25(
    tmp_path: Path,
) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    results = evaluate(load_cases(), settings.with_overrides(model="offline", fault=None))
    measured = [result for result in results if result.case.gold]
    assert all(result.answers and result.baseline for result in measured)
    answers = by_corpus(
        (result.case.corpus, result.answers) for result in measured if result.answers
    )
    below = {corpus or "all": found.recall for corpus, found in answers.items()}
    assert {corpus: recall for corpus, recall in below.items() if recall < MIN_RECALL} == {}
    rows = answer_verdicts(results)
    assert [row[0] for row in rows] == [*dict.fromkeys(r.case.corpus for r in measured), "all"]
    assert [row for row in rows if row[-1] != "PASS"] == []
    assert "| corpus | questions | recall | precision | baseline recall |" in table(results)


@pytest.mark.e2e
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


def test_the_bundled_cases_run_from_any_folder_though_no_run_may_read_their_corpora(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the project folder is no corpus root here
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    [bees] = [(case, corpus) for case, corpus in load_cases() if "honeybees" in case.corpus][:1]
    [result] = evaluate([bees], settings.with_overrides(model="offline", fault=None))
    assert result.defects == [] and result.status == "completed"
    policy = settings.corpus_policy()
    assert not any(bees[1].is_relative_to(root) for root in policy.roots), "roots not widened"


@pytest.mark.parametrize("store", ["database", "memory"])
def test_the_cases_run_whatever_store_the_settings_name_for_the_user_s_database(
    tmp_path: Path, store: str
) -> None:
    """A PostgreSQL user's ``database`` store, or ``memory``: the scratch file keeps its own."""
    settings = Settings(_env_file=None, data_dir=tmp_path, artifact_store=store)  # type: ignore[call-arg]
    [bees] = [(case, corpus) for case, corpus in load_cases() if "honeybees" in case.corpus][:1]
    [result] = evaluate([bees], settings.with_overrides(model="offline", fault=None))
    assert result.defects == [] and result.status == "completed"


@pytest.mark.e2e
def test_handoff_eval_refuses_a_case_corpus_outside_the_roots_naming_it_and_the_setting(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.md").write_text("# Notes\n\nThe vault password is hunter2.\n")
    case = {"id": "peek", "corpus": "elsewhere", "objective": "What is the vault password?"}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{**case, "expect": "completed"}]), encoding="utf-8")
    data = tmp_path / "data"
    result = handoff("eval", "--cases", str(path), data_dir=data, env={"HANDOFF_MODEL": "offline"})
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = one_line_error(result)
    assert f"case 'peek' corpus {elsewhere} is outside the corpus roots" in line
    assert f"HANDOFF_CORPUS_ROOTS={elsewhere}" in line
    assert "hunter2" not in result.stdout + result.stderr and result.stdout == ""
