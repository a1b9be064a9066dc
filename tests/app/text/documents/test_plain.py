"""Plain text read as a document: headings, rules, contents, tags, tables, examples, prose."""

from __future__ import annotations

from app.text.documents import PLAIN, Document, read_document
from tests.app.text.documents.sample import assert_exact, plains, texts


def _read(text: str) -> Document:
    document = read_document(text, PLAIN)
    assert_exact(document)
    return document


def _kinds(document: Document) -> list[str]:
    return [block.kind for block in document.blocks]


def _shown(document: Document) -> str:
    return " ".join(plains(document))


def test_rules_and_underlines_are_never_sentences_and_an_underlined_line_is_a_heading() -> None:
    text = (
        "Basic Installation\n"
        "==================\n"
        "\n"
        "The configure script guesses the values for your system.\n"
        "\n"
        "------------------------------------------------------------\n"
        "\n"
        "Compilers and Options\n"
        "---------------------\n"
        "\n"
        "Some systems need unusual options for compilation.\n"
    )
    document = _read(text)

    assert texts(document) == [
        "The configure script guesses the values for your system.",
        "Some systems need unusual options for compilation.",
    ]
    assert "===" not in _shown(document) and "---" not in _shown(document)
    assert document.title == "Basic Installation"
    assert [s.section for s in document.sentences] == [
        ("Basic Installation",),
        ("Basic Installation", "Compilers and Options"),
    ]
    heading = document.blocks[0]
    assert heading.kind == "heading"
    assert text[heading.start : heading.end] == "Basic Installation\n=================="


def test_numbered_and_all_caps_lines_are_headings_of_the_text_under_them() -> None:
    text = (
        "1.  Introduction\n"
        "\n"
        "   The protocol carries messages between hosts.\n"
        "\n"
        "1.1.  Purpose\n"
        "\n"
        "   It is meant for small networks.\n"
        "\n"
        "CLOSE THE WINDOW\n"
        "\n"
        "To close a window, use the close command.\n"
    )
    document = _read(text)

    assert plains(document) == [
        "The protocol carries messages between hosts.",
        "It is meant for small networks.",
        "To close a window, use the close command.",
    ]
    assert [s.section for s in document.sentences] == [
        ("Introduction",),
        ("Introduction", "Purpose"),
        ("Introduction", "Purpose", "CLOSE THE WINDOW"),
    ]
    assert _kinds(document).count("heading") == 3


def test_a_table_of_contents_is_never_quoted() -> None:
    text = (
        "|08.1|\tSplit a window\n"
        "|08.2|\tSplit a window on another file\n"
        "|08.3|\tWindow size\n"
        "\n"
        "Table of Contents\n"
        "\n"
        "   1. Introduction ........................................ 2\n"
        "   2. Splitting windows ................................... 4\n"
        "\n"
        "Windows show files side by side.\n"
    )
    document = _read(text)

    assert plains(document) == ["Windows show files side by side."]
    assert "table" in _kinds(document)


def test_tags_are_hidden_or_headings_and_links_show_their_name_at_exact_spans() -> None:
    text = (
        "*usr_08.txt*\tFor Vim version 9.1.  Last change: 2024 Jan 01\n"
        "\n"
        "=====================================================================\n"
        "*08.1*\tSplit a window\n"
        "\n"
        "The CTRL-W w command jumps between windows.  See |Q_wi| for more.\n"
        "\n"
        "CTRL-W s\t\t\t\t\t\t*CTRL-W_s*\n"
        ":[N]sp[lit] [file]\t\t\t\t\t*:sp* *:split*\n"
        "\t\tSplit the current window in two.\n"
    )
    document = _read(text)

    assert texts(document) == [
        "The CTRL-W w command jumps between windows.",
        "See |Q_wi| for more.",
        "Split the current window in two.",
    ]
    assert plains(document)[1] == "See Q_wi for more."
    assert document.sentences[0].section == ("Split a window",)
    assert document.sentences[2].section[-1] == "CTRL-W s, :[N]sp[lit] [file]"
    assert "*" not in _shown(document) and "Last change" not in _shown(document)


def test_aligned_command_tables_are_tables() -> None:
    text = (
        "Moving between windows:\n"
        "\n"
        "CTRL-W h   move to the window on the left\n"
        "CTRL-W j   move to the window below\n"
        "CTRL-W k   move to the window above\n"
        "\n"
        "-i, --ignore-case\tignore case distinctions\n"
        "-v, --invert-match\tselect non-matching lines\n"
        "\n"
        "The commands take a count.  Windows wrap around.\n"
    )
    document = _read(text)

    assert plains(document) == [
        "Moving between windows:",
        "The commands take a count.",
        "Windows wrap around.",
    ]
    assert _kinds(document).count("table") == 2


def test_vim_examples_between_greater_and_less_than_are_code() -> None:
    text = (
        "To open a new window, use this command: >\n"
        "\n"
        "\t:split\n"
        "\t:vsplit\n"
        "<\n"
        "This splits the screen in two.\n"
        "\n"
        "Put this in your vimrc file: >vim\n"
        "\tset splitbelow\n"
        "Then new windows open below.\n"
    )
    document = _read(text)

    assert texts(document) == [
        "To open a new window, use this command:",
        "This splits the screen in two.",
        "Put this in your vimrc file:",
        "Then new windows open below.",
    ]
    code = [block for block in document.blocks if block.kind == "code"]
    assert [text[block.start : block.end] for block in code] == [
        ":split\n\t:vsplit",
        "set splitbelow",
    ]


def test_command_lines_and_indented_blocks_after_a_colon_are_code() -> None:
    text = (
        "Install it with pip:\n"
        "\n"
        "$ pip install kestrel\n"
        "Successfully installed kestrel\n"
        "\n"
        "   The configure script accepts variables on its command line,\n"
        "for example:\n"
        "\n"
        "     ./configure CC=c99 CFLAGS=-g LIBS=-lposix\n"
        "     make install\n"
        "\n"
        "   Both commands run in the build directory.\n"
    )
    document = _read(text)

    assert plains(document) == [
        "Install it with pip:",
        "The configure script accepts variables on its command line, for example:",
        "Both commands run in the build directory.",
    ]
    code = [block for block in document.blocks if block.kind == "code"]
    assert [block.media_type for block in code] == ["text/x-shellscript", "text/plain"]
    assert text[code[1].start : code[1].end] == (
        "./configure CC=c99 CFLAGS=-g LIBS=-lposix\n     make install"
    )


def test_prose_paragraphs_and_list_items_are_sentences_at_their_exact_spans() -> None:
    text = (
        "Display two different files above each other.  Or view two\r\n"
        "locations in the file at the same time.\r\n"
        "\r\n"
        "   o  Each window shows one buffer.\r\n"
        "   o  A buffer may be shown in\r\n"
        "      several windows.\r\n"
    )
    document = _read(text)

    assert plains(document) == [
        "Display two different files above each other.",
        "Or view two locations in the file at the same time.",
        "Each window shows one buffer.",
        "A buffer may be shown in several windows.",
    ]
    assert _kinds(document) == ["paragraph", "list_item", "list_item"]


def test_page_headers_and_footers_of_a_paginated_text_are_not_prose() -> None:
    text = (
        "   The server answers every request.\n"
        "\n"
        "Fielding, et al.             Standards Track                    [Page 6]\n"
        "\f\n"
        "RFC 9110                        HTTP Semantics                 June 2022\n"
        "\n"
        "   A client may send a request at any time.\n"
    )
    document = _read(text)

    assert plains(document) == [
        "The server answers every request.",
        "A client may send a request at any time.",
    ]


def test_terms_head_the_descriptions_indented_under_or_beside_them() -> None:
    text = (
        "CTRL-W j\tMove the cursor to the window below.  A count moves\n"
        "\t\tfurther down.\n"
        "\n"
        "'-i'\n"
        "'--ignore-case'\n"
        "     Ignore case distinctions in patterns and data.\n"
        "\n"
        " -- Function: int widget_count (const struct shelf *SHELF, int ALL)\n"
        "     Return the number of widgets on SHELF.\n"
    )
    document = _read(text)

    assert texts(document) == [
        "Move the cursor to the window below.",
        "A count moves\n\t\tfurther down.",
        "Ignore case distinctions in patterns and data.",
        "Return the number of widgets on SHELF.",
    ]
    assert [s.section[-1] for s in document.sentences] == [
        "CTRL-W j",
        "CTRL-W j",
        "'-i', '--ignore-case'",
        "-- Function: int widget_count (const struct shelf *SHELF, int ALL)",
    ]


def test_vim_header_lines_ending_in_a_tilde_are_headings_and_displays_are_code() -> None:
    text = (
        "New commands ~\n"
        "The :pane command opens a pane.\n"
        "\n"
        "\tA intelligent turtle ~\n"
        "\tA very intelligent turtle ~\n"
    )
    document = _read(text)

    assert plains(document) == ["The :pane command opens a pane."]
    assert document.sentences[0].section == ("New commands",)
    assert _kinds(document) == ["heading", "paragraph", "code"]


def test_info_menus_and_tags_after_a_sentence_are_never_quoted() -> None:
    text = (
        "* Menu:\n"
        "\n"
        "* Introduction::                Introduction.\n"
        "* Invoking::                    Command-line options, environment,\n"
        "                                  exit status.\n"
        "\n"
        "The substitution is limited to 4 levels. *E1290*\n"
    )
    document = _read(text)

    assert texts(document) == ["The substitution is limited to 4 levels."]
    assert "table" in _kinds(document)


def test_the_comments_and_later_blocks_of_an_indented_example_are_code() -> None:
    text = (
        "This script numbers the lines of a file.\n"
        "\n"
        "     # Print the line number first.\n"
        "     # Then print the line.\n"
        "\n"
        "     =\n"
        "     p\n"
        "\n"
        "It reads its input once.\n"
    )
    document = _read(text)

    assert plains(document) == [
        "This script numbers the lines of a file.",
        "It reads its input once.",
    ]
    assert _kinds(document) == ["paragraph", "code", "code", "paragraph"]


def test_a_list_right_under_its_lead_sentence_is_a_list() -> None:
    text = "Where can you find plugins?\n- Some come with marten.\n- You can write one yourself.\n"
    document = _read(text)

    assert plains(document) == [
        "Where can you find plugins?",
        "Some come with marten.",
        "You can write one yourself.",
    ]
    assert _kinds(document) == ["paragraph", "list_item", "list_item"]
