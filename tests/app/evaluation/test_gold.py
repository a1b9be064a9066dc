"""Gold answers: recall counts a question only when its gold sentence is cited; precision
counts cited sentences in a gold sentence's section; the BM25 baseline keeps the word limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.evaluation.cases import InvalidCases, load_cases
from app.evaluation.gold import (
    Answers,
    CorpusText,
    GoldIndex,
    GoldPassage,
    baseline,
    same_sentence,
)
from app.evaluation.measures import CaseResult
from app.evaluation.report import answer_verdicts, failed
from graphs.markdown import word_count

WORKER = "A worker claims one task at a time from the queue and runs it."
LEASE = "A claimed task carries a lease of thirty seconds."
DELAY = "The first retry waits two seconds."
CEILING = "No retry delay is ever longer than five minutes."
LOGO = "The project logo is a small brass ring."
DOC = f"""# Ferrule

## Workers

{WORKER} {LEASE}

## Retries

{DELAY} {CEILING}

## Branding

{LOGO}
"""
QUESTIONS = ["What does a worker do?", "How long does the first retry wait?"]


def _corpus(tmp_path: Path) -> CorpusText:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "ferrule.md").write_text(DOC, encoding="utf-8")
    return CorpusText.read(tmp_path / "corpus")


def _gold(corpus: CorpusText) -> GoldIndex:
    gold = {
        QUESTIONS[0]: [GoldPassage(file="ferrule.md", sentence=WORKER)],
        QUESTIONS[1]: [GoldPassage(file="ferrule.md", sentence=DELAY)],
    }
    return GoldIndex.of(corpus, gold, QUESTIONS)


def _at(corpus: CorpusText, sentence: str) -> tuple[str, int]:
    [where] = [where for where, found in corpus.sentences() if found.plain == sentence]
    return where


def test_a_question_counts_as_answered_only_when_its_gold_sentence_is_cited(
    tmp_path: Path,
) -> None:
    corpus = _corpus(tmp_path)
    gold = _gold(corpus)

    both = gold.measure([_at(corpus, WORKER), _at(corpus, DELAY)])
    beside = gold.measure([_at(corpus, LEASE), _at(corpus, CEILING)])

    assert (both.answered, both.missed, both.recall) == (QUESTIONS, [], 1.0)
    assert (beside.answered, beside.missed, beside.recall) == ([], QUESTIONS, 0.0)


def test_precision_counts_cited_sentences_in_a_gold_sentence_s_section(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    gold = _gold(corpus)

    same_sections = gold.measure([_at(corpus, LEASE), _at(corpus, CEILING)])
    with_logo = gold.measure([_at(corpus, WORKER), _at(corpus, LOGO)])

    assert (same_sections.relevant, same_sections.cited, same_sections.precision) == (2, 2, 1.0)
    assert (with_logo.relevant, with_logo.cited, with_logo.precision) == (1, 2, 0.5)


def test_a_sentence_read_with_other_markup_or_cut_short_is_the_same_sentence() -> None:
    assert same_sentence("Run `ferrule worker` to start one.", "Run ferrule worker to start one.")
    assert same_sentence("It waits 2 seconds, e.g.", "It waits 2 seconds, e.g. before a retry.")
    assert not same_sentence("It waits.", "It waits 2 seconds before each retry, and more.")
    assert not same_sentence("", "Anything at all.")


def test_the_baseline_takes_each_question_s_best_sentences_in_turn_within_the_limit(
    tmp_path: Path,
) -> None:
    corpus = _corpus(tmp_path)

    chosen = baseline(corpus, QUESTIONS, max_words=word_count(WORKER) + word_count(DELAY))
    words = sum(word_count(corpus.sentence(where).plain) for where in chosen)

    assert [corpus.sentence(where).plain for where in chosen] == [WORKER, DELAY]
    assert words <= word_count(WORKER) + word_count(DELAY)
    assert baseline(corpus, QUESTIONS, max_words=3) == []


def test_a_gold_sentence_its_file_does_not_hold_is_named(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    gold = {QUESTIONS[0]: [GoldPassage(file="ferrule.md", sentence="Workers sleep at noon.")]}

    with pytest.raises(ValueError, match=r"gold answer of 'What does a worker do\?': no sentence"):
        GoldIndex.of(corpus, gold, QUESTIONS)


def _cases(tmp_path: Path, evidence: object, **case: object) -> Path:
    (tmp_path / "corpus").mkdir(exist_ok=True)
    (tmp_path / "corpus" / "ferrule.md").write_text(DOC, encoding="utf-8")
    entry = {"id": "c", "corpus": "corpus", "objective": QUESTIONS[0], "expect": "completed"}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{**entry, **case}]), encoding="utf-8")
    (tmp_path / "evidence.json").write_text(json.dumps(evidence), encoding="utf-8")
    return path


def test_gold_answers_come_from_the_evidence_file_beside_the_cases(tmp_path: Path) -> None:
    one = {"file": "ferrule.md", "sentence": WORKER}
    path = _cases(tmp_path, {"c": {QUESTIONS[0]: one}})

    [(case, _)] = load_cases(path)

    assert case.gold == {QUESTIONS[0]: [GoldPassage(file="ferrule.md", sentence=WORKER)]}


@pytest.mark.parametrize(
    ("evidence", "message"),
    [
        ({"c": {QUESTIONS[0]: {"sentence": WORKER}}}, r"field c\..*\.file: Field required"),
        ({"c": {QUESTIONS[0]: {"file": "f.md", "sentence": WORKER, "x": 1}}}, r"\.x: Extra"),
        (
            {"c": {"Who wrote it?": {"file": "f.md", "sentence": WORKER}}},
            "'Who wrote it\\?', which",
        ),
    ],
)
def test_bad_gold_answers_are_refused_naming_the_case_and_field(
    tmp_path: Path, evidence: object, message: str
) -> None:
    path = _cases(tmp_path, evidence)

    with pytest.raises(InvalidCases, match=message):
        load_cases(path)


def test_the_shipped_set_has_gold_answers_for_every_answerable_question() -> None:
    for case, corpus in load_cases():
        asked = [
            text for text in case.questions or [case.objective] if text not in case.unanswerable
        ]
        assert set(asked) <= set(case.gold), case.id
        if case.gold:
            GoldIndex.of(CorpusText.read(corpus), case.gold, case.answerable())


def test_eval_fails_a_corpus_below_the_recall_floor_or_the_baseline(tmp_path: Path) -> None:
    path = _cases(tmp_path, {})
    [(case, _)] = load_cases(path)

    def result(answered: int, relevant: int, base_answered: int, base_relevant: int) -> CaseResult:
        found = CaseResult(case)
        found.answers = Answers([f"q{n}" for n in range(answered)], ["q"] * (5 - answered))
        found.answers.relevant, found.answers.cited = relevant, 10
        found.baseline = Answers([f"q{n}" for n in range(base_answered)])
        found.baseline.missed = ["q"] * (5 - base_answered)
        found.baseline.relevant, found.baseline.cited = base_relevant, 10
        return found

    assert not failed([result(5, 8, 5, 4)])
    assert answer_verdicts([result(5, 8, 5, 4)])[-1][-1] == "PASS"
    assert answer_verdicts([result(3, 8, 3, 4)])[-1][-1] == "recall < 0.8"
    assert answer_verdicts([result(4, 8, 5, 4)])[-1][-1] == "recall < baseline"
    assert answer_verdicts([result(5, 4, 5, 4)])[-1][-1] == "precision <= baseline"
    assert failed([result(4, 8, 5, 4)])
