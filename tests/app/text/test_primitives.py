from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from app.text.documents import read_document
from app.text.primitives import strip_citations, word_count


def sentences(text: str) -> list[str]:
    return [sentence.text for sentence in read_document(text).sentences]


def test_sentences_skip_headings_and_keep_exact_offsets() -> None:
    text = "# Title\n\nFirst one here. Second one\nwraps a line.\n\n## Part\n\nThird!"
    found = read_document(text).sentences
    assert [s.text for s in found] == ["First one here.", "Second one\nwraps a line.", "Third!"]
    assert all(text[s.start : s.end] == s.text for s in found)


def test_text_without_end_punctuation_is_still_a_sentence() -> None:
    assert sentences("Cited claim [claim-1]. trailing words") == [
        "Cited claim [claim-1].",
        "trailing words",
    ]


def test_a_paragraph_after_a_line_of_form_feed_is_addressed_where_it_is() -> None:
    """markdown-it strips a form feed or vertical tab line off a paragraph; offsets follow."""
    for text in ("\x0c\nHello there.", "\x0b\r\x0c\n  Hello there."):
        [sentence] = read_document(text).sentences
        assert (sentence.text, sentence.plain) == ("Hello there.", "Hello there.")
        assert text[sentence.start : sentence.end] == sentence.text


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=400))
@example("\x0c\r0")
@example("\x00\x0c")
def test_sentence_offsets_always_address_their_text(text: str) -> None:
    for sentence in read_document(text).sentences:
        assert text[sentence.start : sentence.end] == sentence.text
        assert sentence.text.strip()


def test_word_count_ignores_headings_and_citations() -> None:
    assert word_count("# A title here\n\n## Part\n\nOne two three [claim-12].\n") == 3


def test_strip_citations() -> None:
    assert strip_citations("It was found [claim-1] [claim-22].") == "It was found."
