"""reStructuredText read through docutils: blocks by kind, prose at its exact source spans."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from app.text.documents import RST, Document, read_document
from tests.app.text.documents.sample import assert_exact, plains, texts

MANUAL = """\
.. _top:

:Author: Kestrel Contributors
:Version: 2.4

.. |project| replace:: kestrel
.. |badge| image:: https://img.shields.io/pypi/v/kestrel.svg
   :target: https://pypi.org/project/kestrel/

=========
 Kestrel
=========

|badge|

|project| limits how often code runs. It needs *no* server.

.. comment: the old README said kestrel needed Python 3.6.

Install
=======

Install it with pip::

   $ pip install kestrel

- Buckets are **named**.
- Each bucket
  refills at a steady rate.

.. code-block:: python
   :caption: a limit
   :linenos:

   limit = kestrel.Limit("search", rate=120)

>>> kestrel.acquire("search")
True

Tables
------

+--------+---------+
| mode   | effect  |
+========+=========+
| refuse | raises. |
+--------+---------+

=====  =======
name   default
=====  =======
rate   60
=====  =======

.. toctree::
   :maxdepth: 2

   limits-page

.. note::

   A note is read as prose.
"""


def _read(text: str) -> Document:
    document = read_document(text, RST)
    assert_exact(document)
    return document


def test_titles_paragraphs_lists_code_and_tables_are_the_blocks_markdown_has() -> None:
    document = _read(MANUAL)

    assert [(block.kind, block.media_type) for block in document.blocks] == [
        ("heading", None),
        ("media", "text/markdown"),
        ("paragraph", None),
        ("heading", None),
        ("paragraph", None),
        ("code", "text/x-shellscript"),
        ("list_item", None),
        ("list_item", None),
        ("code", "text/x-python"),
        ("code", "text/x-python"),
        ("heading", None),
        ("table", "text/markdown"),
        ("table", "text/markdown"),
        ("paragraph", None),
    ]
    assert texts(document) == [
        "|project| limits how often code runs.",
        "It needs *no* server.",
        "Install it with pip:",
        "Buckets are **named**.",
        "Each bucket\n  refills at a steady rate.",
        "A note is read as prose.",
    ]
    assert plains(document) == [
        "kestrel limits how often code runs.",
        "It needs no server.",
        "Install it with pip:",
        "Buckets are named.",
        "Each bucket refills at a steady rate.",
        "A note is read as prose.",
    ]
    assert document.title == "Kestrel"
    heading = document.blocks[0]
    assert MANUAL[heading.start : heading.end] == "=========\n Kestrel\n========="
    code = document.blocks[8]
    assert MANUAL[code.start : code.end] == 'limit = kestrel.Limit("search", rate=120)'
    assert [s.section for s in document.sentences][2:] == [("Kestrel", "Install")] * 3 + [
        ("Kestrel", "Install", "Tables")
    ]


def test_comments_fields_substitutions_targets_options_and_tocs_are_never_sentences() -> None:
    document = _read(MANUAL)
    shown = " ".join(plains(document))

    for hidden in ("Python 3.6", "Author", "2.4", "replace", "img.shields", "caption",
                   "linenos", "maxdepth", "limits-page", "_top", "60", "refuse"):  # fmt: skip
        assert hidden not in shown, hidden
    for block in document.blocks:
        if block.prose:
            assert not MANUAL[block.start : block.end].startswith(("..", ":"))


def test_inline_markup_shows_its_text_and_keeps_its_source_span() -> None:
    text = (
        "Use ``acquire()`` or *wait*, read `the guide <https://example.org/guide>`_ and "
        "references_ first. A :func:`~kestrel.acquire` call, a :ref:`retry loop <retries>` "
        "and :emphasis:`this` differ. Escaped \\*stars\\* stay. See [1]_ and |name|.\n\n"
        "**The whole sentence is strong.**\n\n"
        ".. |name| replace:: the glossary\n"
        ".. _references: https://example.org\n"
        ".. [1] A footnote.\n"
    )
    document = _read(text)

    assert plains(document) == [
        "Use acquire() or wait, read the guide and references first.",
        "A acquire call, a retry loop and this differ.",
        "Escaped *stars* stay.",
        "See [1] and the glossary.",
        "The whole sentence is strong.",
        "A footnote.",
    ]
    assert texts(document)[:2] == [
        "Use ``acquire()`` or *wait*, read `the guide <https://example.org/guide>`_ and "
        "references_ first.",
        "A :func:`~kestrel.acquire` call, a :ref:`retry loop <retries>` and :emphasis:`this` "
        "differ.",
    ]
    assert texts(document)[4] == "**The whole sentence is strong.**"  # its markup taken in


def test_sphinx_directives_give_prose_code_or_nothing() -> None:
    text = (
        "API\n===\n\n"
        ".. function:: acquire(name, timeout=None)\n\n"
        "   Take one token from the bucket called *name*.\n\n"
        "   :param name: the bucket's name\n\n"
        ".. versionadded:: 2.2\n"
        "   Buckets can be saved to a file.\n\n"
        ".. autofunction:: kestrel.reset\n\n"
        ".. testcode::\n\n"
        "   print('A sentence in code is code.')\n\n"
        ".. unknownthing:: argument\n\n"
        "   Text of a directive nobody knows is not read.\n"
    )
    document = _read(text)

    assert plains(document) == [
        "Take one token from the bucket called name.",
        "Buckets can be saved to a file.",
    ]
    code = [text[b.start : b.end] for b in document.blocks if b.kind == "code"]
    assert code == ["acquire(name, timeout=None)", "print('A sentence in code is code.')"]


def test_badge_rows_and_link_lines_are_media_and_a_prompt_paragraph_is_code() -> None:
    text = (
        "|ci| |pypi|\n\n"
        "`Docs <https://example.org/docs>`_ | `Source <https://example.org/src>`_\n\n"
        "$ kestrel --version\n\n"
        ".. |ci| image:: https://example.org/ci.svg\n"
        ".. |pypi| image:: https://example.org/pypi.svg\n"
    )
    document = _read(text)

    assert [(block.kind, block.media_type) for block in document.blocks] == [
        ("media", "text/markdown"),
        ("media", "text/markdown"),
        ("code", "text/x-shellscript"),
    ]
    assert document.sentences == ()


@pytest.mark.parametrize(
    "variant",
    [
        lambda text: text.replace("\n", "\r\n"),
        lambda text: "\ufeff" + text,
        lambda text: text.replace("code runs. It", "code runs.\u2028It"),
    ],
    ids=["crlf", "bom", "line-separator"],
)
def test_line_endings_a_bom_and_unicode_line_separators_keep_spans_exact(
    variant: Callable[[str], str],
) -> None:
    text = variant(MANUAL)
    document = _read(text)

    assert [" ".join(plain.split()) for plain in plains(document)] == [
        " ".join(plain.split()) for plain in plains(read_document(MANUAL, RST))
    ]


def test_nothing_is_read_written_or_declared_beyond_the_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.rst"
    secret.write_text("The secret sentence must never be read.\n", encoding="utf-8")
    text = (
        f".. include:: {secret}\n\n"
        ".. raw:: html\n\n   <p>Raw HTML is not run.</p>\n\n"
        f".. csv-table::\n   :file: {secret}\n\n"
        ".. role:: ref(literal)\n\n"
        "Bad *markup and :ref:`loud` text.\n"
    )
    document = _read(text)

    assert plains(document) == ["Bad *markup and loud text."]
    assert capsys.readouterr() == ("", "")
    later = _read(":ref:`the install guide`\n")  # Sphinx's link role, not the role declared
    assert [block.kind for block in later.blocks] == ["media"]


def _kinds(text: str) -> list[str]:
    return [block.kind for block in read_document(text, RST).blocks]


def test_documents_read_in_threads_at_once_read_as_each_does_alone() -> None:
    """docutils keeps roles in its globals: a role one document declares reaches no other."""
    declaring = ".. role:: ref(literal)\n.. default-role:: literal\n\n:ref:`a {0}` `b {0}`\n"
    using = ":ref:`a {0}` :ref:`b {0}`\n\n`A title, {0}.`\n"
    documents = [(declaring if n % 2 else using).format(n) for n in range(16)]
    alone = [_kinds(text) for text in documents]
    read_document.cache_clear()
    found: dict[int, list[str]] = {}
    start = threading.Barrier(len(documents))

    def read(number: int) -> None:
        start.wait()
        found[number] = _kinds(documents[number])

    threads = [threading.Thread(target=read, args=(n,)) for n in range(len(documents))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [found[n] for n in range(len(documents))] == alone
    assert alone[:2] == [["media", "paragraph"], ["code"]]


def test_a_paragraph_with_a_tab_inside_a_line_is_read_at_its_exact_span() -> None:
    text = (
        "Limits\n======\n\n"
        "A bucket refills\tat a steady rate. The rate is\tper second,\n"
        "and a burst may\tspend it at once.\n\n"
        "- A list item\twith a tab.\n"
    )
    document = _read(text)

    assert [" ".join(plain.split()) for plain in plains(document)] == [
        "A bucket refills at a steady rate.",
        "The rate is per second, and a burst may spend it at once.",
        "A list item with a tab.",
    ]
    assert texts(document)[0] == "A bucket refills\tat a steady rate."
    assert texts(document)[2] == "A list item\twith a tab."
    assert_exact(document)
