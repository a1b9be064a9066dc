"""A fragment is no fact: too short, a pointer, or leaning on what it is not cited with."""

from __future__ import annotations

import pytest

from app.text.fragments import fragment


@pytest.mark.parametrize(
    "sentence",
    [
        "No.",
        "For more, see UUID.",
        "See also the configuration page for every option.",
        "In version 2 this was required to serialize uuid.UUID instances.",
        "He argued that recruits follow the odour of the food.",
    ],
)
def test_a_fragment_is_named_as_one(sentence: str) -> None:
    assert fragment(sentence) is not None


def test_a_sentence_that_stands_alone_is_no_fragment() -> None:
    assert fragment("The first retry waits two seconds, and each later one twice as long.") is None
    assert fragment("Version 2 required a custom encoder to serialize uuid.UUID values.") is None
    leaning = "He argued that recruits follow the odour of the food."
    assert fragment(leaning, after_antecedent=True) is None, "cited after its antecedent"
