"""What is published is safe to show: unsafe link targets and control characters are taken out."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from app.text.publishable import publishable, safe_destination, without_controls
from tests.safe_text import CONTROLS, destinations


def test_a_carriage_return_is_a_line_break_as_markdown_reads_it() -> None:
    assert without_controls("a\r\nb\rc") == "a\nb\nc"


def test_escape_sequences_go_whole_and_their_visible_text_stays() -> None:
    text = "see \x1b]8;;http://evil\x07click\x1b]8;;\x07 now\x1b[2J, \x9b31mred\x1b[0m"
    text += " and \x1b]0;t\x1b\\"
    assert without_controls(text) == "see click now, red and "


def test_every_control_character_goes_but_tab_and_newline_stay() -> None:
    text = "a" + "".join(char for char in CONTROLS if char != "\r") + "\tb\nc\r\nd\re"
    assert without_controls(text) == "a\tb\nc\nd\ne"


def test_an_unterminated_sequence_loses_its_introducer_and_keeps_the_text() -> None:
    assert without_controls("a \x1b]8;;http://x b\nc \x1b") == "a 8;;http://x b\nc "


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " java\tscript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "vbscript:msgbox",
        "file:///etc/passwd",
    ],
)
def test_a_scheme_a_reader_may_not_follow_is_unsafe(url: str) -> None:
    assert not safe_destination(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.org/a",
        "http://example.org",
        "mailto:a@example.org",
        "artifact://draft/t-draft",
        "../notes.md#part",
        "#section",
        "java%73cript:x",
    ],
)
def test_web_mail_artifact_and_relative_links_are_safe(url: str) -> None:
    assert safe_destination(url)


def test_an_unsafe_link_keeps_its_text_and_loses_its_target() -> None:
    text = "Read it [here](javascript:alert(document.cookie)) [claim-1].\n"
    assert publishable(text) == "Read it here [claim-1].\n"


def test_safe_links_are_left_byte_for_byte() -> None:
    text = (
        "See [a](https://example.org/a), [b](../b.md#c), <https://example.org>, "
        "<a@example.org>, [m](mailto:a@example.org) and [d](artifact://draft/t-draft) [claim-2].\n"
    )
    assert publishable(text) == text


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("![the stone](data:text/html;base64,AA) stays\n", "the stone stays\n"),
        ("go <javascript:alert(2)> now\n", "go javascript:alert(2) now\n"),
        ("x [a](<javascript:x> 'title') y\n", "x a y\n"),
        ("[a](&#106;avascript:alert(1))\n", "a\n"),
        ("use [the ref][r] and [r]\n\n[r]: javascript:evil\n", "use the ref and r\n\n"),
        ('> quoted [q\n> more](javascript:x "t") end\n', "> quoted q\n> more end\n"),
        ("- item [z](vbscript:x)\n", "- item z\n"),
        ("## Title [t](javascript:x) ##\n", "## Title t ##\n"),
        ("| a |\n|---|\n| [x](file:///etc/passwd) |\n", "| a |\n|---|\n| x |\n"),
        ("![a [b](javascript:q)](data:x)\n", "a b\n"),
    ],
)
def test_every_kind_of_link_target_markdown_it_finds_is_made_safe(
    markdown: str, expected: str
) -> None:
    safe = publishable(markdown)
    assert safe == expected
    assert all(safe_destination(url) for url in destinations(safe))


def test_raw_html_is_shown_as_text() -> None:
    safe = publishable('an <a href="javascript:x">anchor</a>\n\n<div onclick="x">\nhi\n</div>\n')
    assert safe == 'an \\<a href="javascript:x">anchor\\</a>\n\n\\<div onclick="x">\nhi\n\\</div>\n'
    assert "html_inline" not in {t.type for b in MarkdownIt().parse(safe) for t in b.children or []}
    assert "html_block" not in {token.type for token in MarkdownIt().parse(safe)}


def test_what_is_published_is_made_safe_once_and_stays_so() -> None:
    text = "a \x1b[2J[x](java\x00script:y) <javascript:z> ![i](data:q) [claim-3].\n"
    safe = publishable(text)
    assert publishable(safe) == safe
    assert not any(char in safe for char in CONTROLS)
    assert destinations(safe) == []
