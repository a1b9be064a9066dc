"""HTML read as a document: the main content only, prose at its exact source spans."""

from __future__ import annotations

import pytest

from app.text.documents import HTML, Document, read_document
from tests.app.text.documents.sample import assert_exact, plains, texts

PAGE = """\
<!DOCTYPE html>
<html class="sidebar-visible">
<head>
  <title>Widgets &mdash; widgetlib 2.1 documentation</title>
  <script>var note = "A script sentence is never evidence.";</script>
  <style>p::after { content: "Styles are never evidence."; }</style>
</head>
<body>
<a class="skip-link" href="#content">Skip to the main content of the page</a>
<header><p>The header line is decoration for every page.</p></header>
<nav><ul><li><a href="index.html">Home</a></li><li>Navigation text is not read.</li></ul></nav>
<div class="sphinxsidebar"><p>The sidebar describes other pages entirely.</p></div>
<div role="main">
<h1>Widgets<a class="headerlink" href="#widgets">&para;</a></h1>
<p>A <em>widget</em> is drawn once per frame. It keeps its state
   between frames, e.g.&nbsp;the scroll offset.</p>
<p>Widgets are &lt;b&gt;never&lt;/b&gt; shared &amp; copied.<br>They are cheap.</p>
<div class="highlight"><pre><span class="kn">import</span> widgetlib
widgetlib.draw()  # Draws every widget at once.
</pre></div>
<p><code>widgetlib.draw()</code></p>
<p>$ pip install widgetlib</p>
<h2>Sizes</h2>
<ul>
  <li>Each widget has a name.
  <li>Names are unique within a window<span class="sr-only"> (screen readers)</span>.
</ul>
<table><tr><th>name</th><th>width</th></tr>
<tr><td>button</td><td>Buttons are forty pixels wide.</td></tr></table>
<p><a href="sizes.html">Sizes</a> | <a href="colours.html">Colours</a></p>
<div hidden><p>Hidden text is never evidence.</p></div>
<div style="display: none"><p>Undisplayed text is never evidence.</p></div>
<form><label>Searching is a form, not evidence.</label><input name="q"></form>
<aside><p>An aside is not the page's content.</p></aside>
</div>
<footer><p>Copyright 2024 by the widget authors, who wrote this.</p></footer>
</body>
</html>
"""


def _read(text: str) -> Document:
    document = read_document(text, HTML)
    assert_exact(document)
    return document


def test_headings_paragraphs_lists_code_and_tables_of_the_main_content_are_its_blocks() -> None:
    document = _read(PAGE)

    assert [(block.kind, block.media_type) for block in document.blocks] == [
        ("heading", None),
        ("paragraph", None),
        ("paragraph", None),
        ("code", "text/plain"),
        ("code", "text/html"),
        ("code", "text/x-shellscript"),
        ("heading", None),
        ("list_item", None),
        ("list_item", None),
        ("table", "text/html"),
        ("media", "text/html"),
    ]
    assert plains(document) == [
        "A widget is drawn once per frame.",
        "It keeps its state between frames, e.g. the scroll offset.",
        "Widgets are <b>never</b> shared & copied.",
        "They are cheap.",
        "Each widget has a name.",
        "Names are unique within a window.",
    ]
    assert texts(document) == [
        "A <em>widget</em> is drawn once per frame.",
        "It keeps its state\n   between frames, e.g.&nbsp;the scroll offset.",
        "Widgets are &lt;b&gt;never&lt;/b&gt; shared &amp; copied.",
        "They are cheap.",
        "Each widget has a name.",
        'Names are unique within a window<span class="sr-only"> (screen readers)</span>.',
    ]
    assert document.title == "Widgets"
    assert [s.section for s in document.sentences][-1] == ("Widgets", "Sizes")
    code = document.blocks[3]
    assert PAGE[code.start : code.end].startswith("<pre>") and PAGE[code.end - 6 :].startswith(
        "</pre>"
    )


def test_navigation_decoration_scripts_forms_and_hidden_text_are_never_sentences() -> None:
    document = _read(PAGE)
    shown = " ".join(plains(document))

    for hidden in ("script", "Styles", "Skip", "header", "Navigation", "sidebar", "Hidden",
                   "Undisplayed", "Searching", "aside", "Copyright", "Home", "forty",
                   "Draws", "screen readers", "documentation"):  # fmt: skip
        assert hidden not in shown, hidden


def test_a_page_without_main_reads_its_body_and_a_layout_table_is_no_table() -> None:
    text = (
        "<html><body><div class='nav-panel'><p>Next: <a href='b.html'>Other</a>, "
        "Up: <a href='index.html'>Top</a></p></div>"
        "<table width='100%'><tr><td><h1>Old manual</h1>"
        "<p>An old page lays itself out in a table.<p>Its paragraphs are still prose."
        "</td></tr></table></body></html>"
    )
    document = _read(text)

    assert plains(document) == [
        "An old page lays itself out in a table.",
        "Its paragraphs are still prose.",
    ]
    assert document.title == "Old manual"


def test_the_main_content_is_read_even_when_a_wrapper_class_names_a_sidebar() -> None:
    text = (
        "<body class='has-sidebar'><div class='page-with-sidebar'>"
        "<p>Only this page's body holds its prose.</p></div></body>"
    )
    document = _read(text)

    assert plains(document) == ["Only this page's body holds its prose."]


def test_articles_are_the_main_content_when_a_page_has_no_main() -> None:
    text = (
        "<body><div><p>Text around the articles is not read.</p></div>"
        "<article><header><h1>First</h1></header><p>The first article is read.</p></article>"
        "<article><p>The second article is read too.</p></article></body>"
    )
    document = _read(text)

    assert plains(document) == ["The first article is read.", "The second article is read too."]
    assert document.title == "First"  # an article's own header is read, a page's is not


@pytest.mark.parametrize(
    "variant",
    ["\r\n", "\r"],
    ids=["crlf", "cr"],
)
def test_line_endings_keep_spans_exact_and_lines_as_the_text_has_them(variant: str) -> None:
    text = PAGE.replace("\n", variant)
    document = _read(text)

    assert [" ".join(plain.split()) for plain in plains(document)] == [
        " ".join(plain.split()) for plain in plains(read_document(PAGE, HTML))
    ]
    first = document.sentences[1]
    assert document.lines_of(first.start, first.end) == (15, 16)


def test_unclosed_tags_and_stray_end_tags_still_read_every_paragraph() -> None:
    text = (
        "<main><p>First paragraph without an end tag.<p>Second one.</span></div>"
        "<ul><li>Item one.<li>Item two.</ul><p>Last <b>bold <i>words.</main>"
    )
    document = _read(text)

    assert plains(document) == [
        "First paragraph without an end tag.",
        "Second one.",
        "Item one.",
        "Item two.",
        "Last bold words.",
    ]
    assert [block.kind for block in document.blocks] == [
        "paragraph", "paragraph", "list_item", "list_item", "paragraph",
    ]  # fmt: skip
