"""Documents read as documents: which blocks are prose, and sentences with exact offsets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.settings import BUNDLED_CORPUS
from app.text.documents import PROSE_KINDS, Document, read_document

README = """\
---
title: handoff
---

# Handoff *workflow*

[![PyPI](https://img.shields.io/pypi/v/handoff.svg)](https://pypi.org/project/handoff/)
[![CI](https://github.com/acme/handoff/actions/workflows/ci.yml/badge.svg)](https://github.com/acme/handoff/actions)

<p align="center">
  <img src="docs/logo.png" width="200" alt="logo">
</p>

Handoff is a **LangGraph** template, e.g. for research with agents. Agents hand work
to each other through [validated contracts](docs/contracts.md), not chat transcripts.

## Install

$ pip install handoff
$ handoff --help

```bash
make demo   # install, then research and review an article
```

| to | read |
| --- | --- |
| run it | [docs/cli.md](docs/cli.md) |

- Runs are checkpointed by `thread_id` in SQLite.
- See [the docs](docs/index.md)

## Cite

@software{handoff2024,
  title = {Handoff: a LangGraph workflow template},
  year = {2024},
}

> Dr. Young read the demotic text first. Champollion read the hieroglyphs.
"""

CORPUS_FILES = sorted(BUNDLED_CORPUS.glob("*.md"))


def texts(document: Document) -> list[str]:
    return [sentence.text for sentence in document.sentences]


def plains(document: Document) -> list[str]:
    return [sentence.plain for sentence in document.sentences]


def assert_exact(document: Document) -> None:
    for sentence in document.sentences:
        assert sentence.text == document.text[sentence.start : sentence.end]
        assert sentence.text == sentence.text.strip()
        block = document.blocks[sentence.block]
        assert block.prose
        assert block.start <= sentence.start < sentence.end <= block.end


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


def test_a_sentence_is_not_split_at_e_g_or_dr_or_a_decimal() -> None:
    cases = [
        ["Many scripts, e.g. demotic and hieratic, were written with a brush.", "They were fast."],
        ["The middle text, i.e. the demotic one, was the longest.", "It was read first."],
        ["Dr. Young compared the three texts.", "Mr. Bankes brought the obelisk."],
        ["A copy reached St. Petersburg in 1823.", "It arrived in spring."],
        ["The slab is 3.5 feet wide, and the catalogue is v1.2.3 now.", "It is broken."],
        ["The stone toured the U.S. and Canada in 1972.", "Crowds came."],
        ["Papyri, ostraca, stelae, etc. were all studied.", "Many survive."],
        ["He hesitated... then read the name aloud.", "It was Ptolemy."],
        ['He wrote, "The key is Coptic."', "Nobody believed him."],
    ]
    for sentences in cases:
        assert texts(read_document(" ".join(sentences))) == sentences


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


def test_every_sentence_of_tricky_markdown_is_exact() -> None:
    text = (
        '**Note.** The rest follows. Read [the guide](https://x.org/a.b "Guide")\n\n'
        "*One. Two.* And `a.b()` works. \\*Starred\\* here. &copy; 2024 Acme.\n\n"
        "- Item one. Item\n  two.\n  > Quoted in an item. Yes.\n\n"
        "See <https://example.com/>, [ref] and ![logo](x.png) the caption. Done.\n\n"
        "[ref]: https://example.com/ref\n"
    )
    document = read_document(text)
    assert_exact(document)
    assert texts(document) == [
        "**Note.**",
        "The rest follows.",
        'Read [the guide](https://x.org/a.b "Guide")',
        "*One.",
        "Two.*",
        "And `a.b()` works.",
        "\\*Starred\\* here.",
        "&copy; 2024 Acme.",
        "Item one.",
        "Item\n  two.",
        "Quoted in an item.",
        "Yes.",
        "See <https://example.com/>, [ref] and ![logo](x.png) the caption.",
        "Done.",
    ]


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


def test_chinese_sentences_split_at_full_width_stops() -> None:
    sentences = [
        "罗塞塔石碑是一块刻有三种文字的石碑。",
        "它于一七九九年在埃及被法国士兵发现！",
        "碑文用「圣书体」、「世俗体」和古希腊文写成。",
        "为什么古希腊文如此重要？",
        "学者们争论了二十年……直到商博良出现。",
        "杨格写道：「这些符号代表声音。」",
        "后来的研究证实了这一点",
    ]
    text = "# 罗塞塔石碑\n\n" + "".join(sentences[:3]) + "\n" + "".join(sentences[3:]) + "\n"
    document = read_document(text)

    assert texts(document) == sentences
    assert plains(document) == sentences
    assert document.title == "罗塞塔石碑"
    assert_exact(document)


def test_plain_removes_links_emphasis_and_inline_html() -> None:
    text = (
        "The *Rosetta* **Stone** is in [the British Museum](https://britishmuseum.org) "
        '<span class="x">since</span> 1802 ![photo](stone.jpg)`.` '
        "It is made of granodiorite &amp; weighs about 760 kg \\(metric\\).\n"
    )
    document = read_document(text)

    assert plains(document) == [
        "The Rosetta Stone is in the British Museum since 1802 .",
        "It is made of granodiorite & weighs about 760 kg (metric).",
    ]
    assert texts(document)[0].startswith("The *Rosetta* **Stone** is in [the British Museum](")
    assert_exact(document)


def test_markup_touching_a_sentence_stays_with_it() -> None:
    document = read_document("**Warning.** Do not run it twice. Read [the guide](g.md)\n")

    assert texts(document) == ["**Warning.**", "Do not run it twice.", "Read [the guide](g.md)"]


def test_plain_text_documents_are_paragraphs() -> None:
    text = "# Not a heading. Just text.\n\n  - not a list, e.g. prose\nwrapped. Next.\n\n\n$ echo"
    document = read_document(text, "text/plain")

    assert [block.kind for block in document.blocks] == ["paragraph"] * 3
    assert all(block.section == () for block in document.blocks)
    assert document.title is None
    assert texts(document) == [
        "# Not a heading.",
        "Just text.",
        "- not a list, e.g. prose\nwrapped.",
        "Next.",
        "$ echo",
    ]
    assert plains(document)[2] == "- not a list, e.g. prose wrapped."
    assert_exact(document)


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


def test_prose_kinds_are_the_blocks_that_give_sentences() -> None:
    document = read_document(README)

    assert {document.blocks[s.block].kind for s in document.sentences} <= PROSE_KINDS
    assert [block.prose for block in document.blocks].count(True) == 4


def test_only_markdown_and_plain_text_are_read() -> None:
    with pytest.raises(ValueError, match="text/html"):
        read_document("<p>Hi.</p>", "text/html")


def test_a_stop_with_no_space_after_it_ends_no_sentence() -> None:
    text = "# T\n\nA task that raises `ferrule.Reject` fails at once. See example.com for more.\n"
    assert [s.text for s in read_document(text).sentences] == [
        "A task that raises `ferrule.Reject` fails at once.",
        "See example.com for more.",
    ]
