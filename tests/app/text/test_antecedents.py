"""Which sentences lean on the one before them: pronouns whose referent they never name."""

from __future__ import annotations

import pytest

from app.text.antecedents import leans_on_earlier


@pytest.mark.parametrize(
    "sentence",
    [
        "He showed that a forager dances.",
        "In the 1940s he showed that a forager dances.",
        "Later he argued for odour.",
        "It's also a command line tool.",
        "This stone was found in 1799.",
        "The latter was never printed.",
        "他在105年把纸献给汉和帝。",
    ],
)
def test_a_sentence_whose_pronoun_points_back_leans_on_the_one_before(sentence: str) -> None:
    assert leans_on_earlier(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Karl von Frisch trained honeybees to visit dishes of sugar water.",
        "Wenner did not deny that the dance exists, but he claimed it was not used.",
        "When Champollion saw the cartouche, he knew the name.",
        "Bees fan their wings to cool the hive.",
        "蔡伦是东汉时期的宦官。",
    ],
)
def test_a_sentence_that_names_its_referent_stands_on_its_own(sentence: str) -> None:
    assert not leans_on_earlier(sentence)
