"""Which blocks of a document are prose: code, tables, badges, HTML, prompts and BibTeX are not."""

from __future__ import annotations

import sys
import threading

import mdurl
import pytest

from app.text.documents import PROSE_KINDS, blocks, read_document
from tests.app.text.documents.sample import README, assert_exact, plains, texts


def test_code_fences_tables_badges_and_html_give_no_prose_sentences() -> None:
    document = read_document(README)

    assert [(block.kind, block.media_type) for block in document.blocks] == [
        ("heading", None),
        ("media", "text/markdown"),
        ("html", "text/markdown"),
        ("paragraph", None),
        ("heading", None),
        ("code", "text/x-shellscript"),
        ("code", "text/x-shellscript"),
        ("table", "text/markdown"),
        ("list_item", None),
        ("list_item", None),
        ("heading", None),
        ("code", "application/x-bibtex"),
        ("quote", None),
    ]
    assert texts(document) == [
        "Handoff is a **LangGraph** template, e.g. for research with agents.",
        "Agents hand work\nto each other through [validated contracts](docs/contracts.md), "
        "not chat transcripts.",
        "Runs are checkpointed by `thread_id` in SQLite.",
        "See [the docs](docs/index.md)",
        "Dr. Young read the demotic text first.",
        "Champollion read the hieroglyphs.",
    ]
    assert plains(document) == [
        "Handoff is a LangGraph template, e.g. for research with agents.",
        "Agents hand work to each other through validated contracts, not chat transcripts.",
        "Runs are checkpointed by thread_id in SQLite.",
        "See the docs",
        "Dr. Young read the demotic text first.",
        "Champollion read the hieroglyphs.",
    ]
    assert [s.index for s in document.sentences] == list(range(6))
    assert [(s.block, s.position) for s in document.sentences] == [
        (3, 0), (3, 1), (8, 0), (9, 0), (12, 0), (12, 1),
    ]  # fmt: skip
    assert document.title == "Handoff workflow"
    assert_exact(document)


def test_section_path_follows_heading_levels() -> None:
    text = (
        "# Champollion\n\nIntro.\n\n## Early life\n\nBorn 1790.\n\n### Grenoble\n\nSchool.\n\n"
        "## Work\n\nDecipherment.\n\n#### Skipped a level\n\nDeep.\n\n"
        "Setext title\n============\n\nFresh start.\n"
    )
    document = read_document(text)

    assert [(s.plain, s.section) for s in document.sentences] == [
        ("Intro.", ("Champollion",)),
        ("Born 1790.", ("Champollion", "Early life")),
        ("School.", ("Champollion", "Early life", "Grenoble")),
        ("Decipherment.", ("Champollion", "Work")),
        ("Deep.", ("Champollion", "Work", "Skipped a level")),
        ("Fresh start.", ("Setext title",)),
    ]
    headings = [block for block in document.blocks if block.kind == "heading"]
    assert headings[1].section == ("Champollion", "Early life")  # a heading includes itself
    assert text[headings[-1].start : headings[-1].end] == "Setext title\n============"


def test_shell_prompt_and_bibtex_paragraphs_are_code() -> None:
    text = (
        "$ python main.py\nhello\n\n"
        "> $ make demo\n\n"
        ">>> import handoff\n>>> handoff.run()\n'ok'\n\n"
        "PS> Get-Item .\n\n"
        "C:\\> dir\n\n"
        "@article{young1819,\n  title = {Egypt},\n}\n\n"
        "| a | b |\n| c | d |\n\n"
        "```python\nprint('This is code. Not prose.')\n```\n\n"
        "    indented = 'code'\n"
    )
    document = read_document(text)

    assert document.sentences == ()
    assert [(block.kind, block.media_type) for block in document.blocks] == [
        ("code", "text/x-shellscript"),
        ("code", "text/x-shellscript"),
        ("code", "text/x-python"),
        ("code", "text/x-shellscript"),
        ("code", "text/x-shellscript"),
        ("code", "application/x-bibtex"),
        ("table", "text/markdown"),
        ("code", "text/x-python"),
        ("code", "text/plain"),
    ]
    repl = document.blocks[2]
    assert text[repl.start : repl.end] == ">>> import handoff\n>>> handoff.run()\n'ok'"


def test_list_and_quote_markers_are_not_part_of_the_span() -> None:
    text = (
        "- First point. Second point\n  wraps here.\n"
        "- [ ] Task item.\n\n"
        "1. Numbered.\n"
        "10) Also numbered.\n\n"
        "> Quoted one. Quoted two\n> wraps here.\n"
        ">\n> > Nested quote.\n"
    )
    document = read_document(text)

    assert texts(document) == [
        "First point.",
        "Second point\n  wraps here.",
        "[ ] Task item.",
        "Numbered.",
        "Also numbered.",
        "Quoted one.",
        "Quoted two\n> wraps here.",
        "Nested quote.",
    ]
    assert plains(document)[1] == "Second point wraps here."
    assert plains(document)[6] == "Quoted two wraps here."
    kinds = [document.blocks[s.block].kind for s in document.sentences]
    assert kinds == ["list_item"] * 5 + ["quote"] * 3
    assert_exact(document)


def test_plain_text_documents_are_not_read_as_markdown() -> None:
    text = "# Not a heading. Just text.\n\n  - a list item, e.g. prose\nwrapped. Next.\n\n\n$ echo"
    document = read_document(text, "text/plain")

    assert [block.kind for block in document.blocks] == ["paragraph", "list_item", "code"]
    assert all(block.section == () for block in document.blocks)
    assert document.title is None
    assert texts(document) == [
        "# Not a heading.",
        "Just text.",
        "a list item, e.g. prose\nwrapped.",
        "Next.",
    ]
    assert plains(document)[2] == "a list item, e.g. prose wrapped."
    assert_exact(document)


def test_prose_kinds_are_the_blocks_that_give_sentences() -> None:
    document = read_document(README)

    assert {document.blocks[s.block].kind for s in document.sentences} <= PROSE_KINDS
    assert [block.prose for block in document.blocks].count(True) == 4


def test_only_the_media_types_read_are_read_and_the_error_names_them() -> None:
    with pytest.raises(ValueError, match="'application/pdf': only text/markdown, text/plain"):
        read_document("%PDF-1.7", "application/pdf")


def read_at_once(text: str, readers: int) -> list[BaseException]:
    """What ``readers`` threads reading ``text`` at the same moment raised."""
    start = threading.Barrier(readers)
    errors: list[BaseException] = []

    def read() -> None:
        start.wait()
        try:
            read_document(text)
        except BaseException as error:  # every thread's failure is kept, none is lost
            errors.append(error)

    threads = [threading.Thread(target=read) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_research_branches_reading_link_references_at_once_never_meet_a_half_built_table() -> None:
    """Each trial starts as a fresh process does: no parser yet and mdurl's tables unbuilt.

    Without the parser building them first, about half of such trials raised IndexError
    in one of the threads (mdurl publishes a table before filling it); markdown-it's
    rulers publish their rule cache the same way ("none of the block rules matched").
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for trial in range(60):
            blocks._parser.cache_clear()
            mdurl._encode.encode_cache.clear()
            mdurl._decode.decode_cache.clear()
            text = f"Trial {trial}.\n\n[ref]: https://example.com/a%20b?x=1#y\n\n[r2]: <http://é.org/>\n"
            errors = read_at_once(text, readers=6)
            assert errors == [], f"trial {trial}: {errors[0]!r}"
    finally:
        sys.setswitchinterval(before)
