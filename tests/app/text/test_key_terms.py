"""Key terms: stems across word forms, Chinese and Japanese pairs, what a question asks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.text.key_terms import keys, query_keys


def test_stems_meet_across_word_forms() -> None:
    assert keys("decipherment") == keys("deciphering") == keys("deciphered")
    assert keys("honeybees") == keys("honeybee")


def test_an_opening_imperative_and_an_aspect_word_are_not_key_terms() -> None:
    assert query_keys("Document how ferrule handles tasks that fail") == keys(
        "ferrule handles tasks fail"
    )
    assert query_keys("Describe the life of Champollion") == keys("Champollion")
    assert query_keys("Describe the history") == keys("history"), "nothing else to keep"


def test_chinese_and_japanese_questions_keep_the_pairs_inside_their_words() -> None:
    assert query_keys("蔡伦出生于哪一年？") >= {"蔡伦"}
    assert "伦出" not in query_keys("蔡伦出生于哪一年？"), "a pair straddling two words"
    assert query_keys("富士山について説明してください") == {"富士", "士山"}


def test_terminal_escapes_are_not_words_of_a_question() -> None:
    assert query_keys("Explain the Rosetta Stone \x1b]0;pwned\x07 \x1b[2J \x9b31m") == keys(
        "Rosetta Stone"
    )


def test_threads_stem_alike_each_with_its_own_stemmer() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from app.text.key_terms import stem

    words = [
        f"{root}{ending}"
        for root in ("decipher", "nest", "colon", "work", "danc")
        for ending in ("ing", "ed", "ment", "es", "ers", "ation", "s", "")
    ]
    serial = [stem.__wrapped__(word) for word in words]
    with ThreadPoolExecutor(max_workers=8) as pool:
        rounds = list(pool.map(lambda _: [stem.__wrapped__(w) for w in words], range(64)))
    assert all(found == serial for found in rounds)


def test_the_quantity_word_of_a_how_question_is_not_a_key_term() -> None:
    assert query_keys("How far do foragers fly?") == keys("foragers fly")
    assert query_keys("How many eggs can a queen lay?") == keys("eggs queen lay")


LAZY_SEGMENTER = """
import sys
import app.cli
from app.text.key_terms import query_keys
query_keys("How was the Rosetta Stone deciphered?")
assert "rjieba" not in sys.modules, "a command loaded the segmenter with no CJK to cut"
query_keys("罗塞塔石碑是哪一年发现的？")
assert "rjieba" in sys.modules
"""


@pytest.mark.e2e
def test_the_chinese_segmenter_loads_only_when_a_text_has_chinese_to_cut() -> None:
    """Its dictionary takes half a second to load: every command would pay it at start."""
    result = subprocess.run(
        [sys.executable, "-c", LAZY_SEGMENTER],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
