"""A question asking for a number, a year, a person or a place is answered only by one."""

from __future__ import annotations

import pytest

from app.text.answer_types import AnswerType, asked_type, defined, holds


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many copies of the guide were sold in 1995?", AnswerType.NUMBER),
        ("For how much is the Rosetta Stone insured?", AnswerType.NUMBER),
        ("What is the largest file size that driftwood can back up?", AnswerType.NUMBER),
        ("In which year was ferrule first released in Tokyo?", AnswerType.YEAR),
        ("蔡伦出生于哪一年？", AnswerType.YEAR),
        ("When was the Great Wall built?", AnswerType.DATE),
        ("Who found the Rosetta Stone, and where?", AnswerType.PERSON),
        ("Where does driftwood restore files by default?", AnswerType.PLACE),
        ("Does kestrel need a server?", AnswerType.YES_NO),
        ("纸是蔡伦发明的吗？", AnswerType.YES_NO),
        ("Which environment variable sets how many times a task may run?", None),
        ("Why was the Greek section useful to scholars?", None),
        ("Explain how large a kestrel bucket is and how it refills", None),
    ],
)
def test_the_kind_asked_is_that_of_the_first_wh_phrase_and_a_task_asks_none(
    question: str, kind: AnswerType | None
) -> None:
    assert asked_type(question) is kind


def test_a_number_must_be_one_the_question_does_not_already_hold() -> None:
    question = "How many buckets can one kestrel process hold?"
    assert not holds(AnswerType.NUMBER, "Buckets live in the memory of one process.", question)
    assert holds(AnswerType.NUMBER, "One process holds up to 64 buckets.", question)


def test_a_question_after_a_bound_wants_a_sentence_stating_one() -> None:
    question = "How many buckets can one process hold at most?"
    assert not holds(AnswerType.NUMBER, "Two processes get two separate buckets.", question)
    assert holds(AnswerType.NUMBER, "A process holds no more than 64 buckets.", question)


def test_a_year_is_written_out_while_a_date_may_be_a_century_or_a_period() -> None:
    assert holds(AnswerType.YEAR, "French soldiers found it in July 1799.")
    assert holds(AnswerType.YEAR, "公元794年前后，巴格达建立了第一座造纸作坊。")
    assert not holds(AnswerType.YEAR, "十三世纪，法布里亚诺成为重要的造纸城市。")
    assert not holds(AnswerType.YEAR, "It was popular in the 1920s.")
    assert holds(AnswerType.DATE, "十三世纪，法布里亚诺成为重要的造纸城市。")
    assert holds(AnswerType.DATE, "长城的修建始于春秋战国时期。")
    assert not holds(AnswerType.DATE, "The wall is very long.")


def test_a_person_is_a_name_not_an_institution_and_not_the_question_s_own_words() -> None:
    question = "Who led the 1999 cleaning of the Rosetta Stone?"
    museum = "In 1999 conservators at the British Museum cleaned the Rosetta Stone."
    assert not holds(AnswerType.PERSON, museum, question)
    assert holds(AnswerType.PERSON, "The cleaning was led by Eleanor Marsh.", question)
    assert holds(AnswerType.PERSON, "French soldiers found the Rosetta Stone.", "Who found it?")


def test_a_place_is_a_location_phrase_a_name_or_a_path() -> None:
    question = "Where does stackconf look for its TOML file by default?"
    assert holds(AnswerType.PLACE, "It defaults to config.toml.", question)
    assert holds(AnswerType.PLACE, "It reads the file in the working directory.", question)
    assert not holds(AnswerType.PLACE, "Stackconf reads it once.", question)


def test_a_question_of_no_kind_and_a_yes_no_question_take_any_sentence() -> None:
    assert holds(None, "Anything at all.")
    assert holds(AnswerType.YES_NO, "kestrel needs no server.", "Does kestrel need a server?")


def test_a_chinese_or_japanese_definition_opens_with_what_it_defines() -> None:
    assert defined("蔡伦是东汉时期的宦官，字敬仲，桂阳郡人。") == frozenset({"蔡伦"})
    assert defined("東京は日本の首都である。") == frozenset({"東京"})
    assert defined("蔡伦于是改进造纸方法。") == frozenset(), "于是 is 'and so', not 'is'"
    assert defined("纸不是蔡伦发明的。") == frozenset(), "不是 says what it is not"
