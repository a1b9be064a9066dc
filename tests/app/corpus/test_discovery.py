"""Which files a corpus holds: every suffix ``CORPUS_SUFFIXES`` names, read as its media type."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.corpus.discovery import discover
from app.corpus.reading import SUFFIXES, CorpusPolicy
from graphs.errors import SourceRefused
from tests.conftest import write_corpus


def _policy(root: Path) -> CorpusPolicy:
    return CorpusPolicy(roots=(root.resolve(),), max_bytes=1_000_000, read_seconds=5)


def test_restructuredtext_and_html_files_are_documents_with_their_media_types(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(
        tmp_path / "docs",
        {
            "guide.rst": "Guide\n=====\n\nText.\n",
            "page.html": "<p>Text.</p>",
            "old.HTM": "<p>Text.</p>",
            "notes.md": "# Notes\n",
            "plain.txt": "Text.\n",
            "slides.pdf": "%PDF",
            "logo.svg": "<svg/>",
        },
    )
    found = discover([corpus], _policy(tmp_path))

    assert [(document.path.name, document.media_type) for document in found] == [
        ("guide.rst", "text/x-rst"),
        ("notes.md", "text/markdown"),
        ("old.HTM", "text/html"),
        ("page.html", "text/html"),
        ("plain.txt", "text/plain"),
    ]


def test_a_corpus_of_other_formats_names_every_format_read(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "docs", {"slides.pdf": "%PDF", "report.docx": "PK"})
    with pytest.raises(SourceRefused) as in_folder:
        discover([corpus], _policy(tmp_path))
    with pytest.raises(SourceRefused) as named:
        discover([corpus / "slides.pdf"], _policy(tmp_path))

    assert str(in_folder.value) == (
        f"corpus {corpus} holds no document this workflow reads, only {corpus / 'report.docx'}, "
        f"{corpus / 'slides.pdf'}; supported formats: {SUFFIXES}"
    )
    assert str(named.value).endswith(
        f"slides.pdf is not a document this workflow reads; supported formats: {SUFFIXES}"
    )
    assert {".md", ".txt", ".rst", ".html", ".htm"} == set(SUFFIXES.split("/"))
