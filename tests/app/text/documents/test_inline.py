"""What a reader sees of inline markdown, and the exact source each sentence keeps."""

from __future__ import annotations

from app.text.documents import read_document
from tests.app.text.documents.sample import assert_exact, plains, texts


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
