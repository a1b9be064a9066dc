"""Offsets and lines of a read document: each sentence is its source text, lines as parsed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.settings import BUNDLED_CORPUS
from app.text.documents import read_document
from tests.app.text.documents.sample import README, assert_exact, plains, texts

CORPUS_FILES = sorted(BUNDLED_CORPUS.glob("*.md"))


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda path: path.name)
def test_every_sentence_is_the_exact_source_text_at_its_offsets(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    document = read_document(text)

    assert_exact(document)
    # the bundled prose ends every sentence in ". " before a capital, with no abbreviations
    expected = [
        sentence
        for block in re.split(r"\n\s*\n", text)
        if block.strip() and not block.startswith("#")
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", block.strip())
    ]
    assert texts(document) == expected
    assert plains(document) == expected


def test_lines_of_and_block_at() -> None:
    document = read_document(README)
    second = document.sentences[1]

    assert document.lines_of(second.start, second.end) == (14, 15)
    assert document.lines_of(0, 0) == (1, 1)
    paragraph = document.blocks[second.block]
    assert (paragraph.first_line, paragraph.last_line) == (14, 15)
    assert document.block_at(second.start, second.end) is paragraph
    fence = README.index("make demo")
    code = document.block_at(fence, fence + len("make demo"))
    assert code is not None and code.kind == "code" and code.first_line == 22
    assert README[code.start : code.end].startswith("```bash")
    assert document.block_at(0, 3) is None  # front matter belongs to no block
    assert document.block_at(second.start, paragraph.end + 1) is None  # runs past the block
    with pytest.raises(ValueError, match="not inside"):
        document.lines_of(5, len(README) + 1)


def test_front_matter_is_skipped_and_lines_keep_their_numbers() -> None:
    text = "---\ntitle: Front\nlayout: post\n---\nBody sentence.\n"
    document = read_document(text)

    assert document.title is None
    assert [block.kind for block in document.blocks] == ["paragraph"]
    assert document.blocks[0].first_line == 5
    assert texts(document) == ["Body sentence."]


def test_windows_line_endings_keep_offsets_and_lines() -> None:
    text = "# Title\r\n\r\nOne line\r\nwraps here. Two.\r\n\r\n- Item.\r\n"
    document = read_document(text)

    assert texts(document) == ["One line\r\nwraps here.", "Two.", "Item."]
    assert [document.lines_of(s.start, s.end) for s in document.sentences] == [
        (3, 4), (4, 4), (6, 6),
    ]  # fmt: skip
    assert_exact(document)
