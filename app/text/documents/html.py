"""HTML read as a document: the page's main content, each text at its exact source offsets.

Python's ``html.parser`` tokenises the page (``convert_charrefs=False``, so every text
event is verbatim source and every entity its own event) and reports where each token
starts (``getpos``); a token ends where the next one starts. So a sentence's span is the
source from its first visible character to its last, the inline tags and entities between
them included, as a markdown sentence keeps its ``**`` and link syntax: the quote is those
source characters, the reader's text (``plain``) is what a browser shows.

The tokeniser builds no tree; the open elements are kept here with HTML's implied ends
(a ``<p>`` is closed by the next block, an ``<li>`` by the next item, a cell by the next
cell), which is all a reader of prose needs.

Only the main content is evidence: ``<main>`` or ``role="main"`` when the page has one,
else its ``<article>`` elements, else its body. Navigation, banners, menus, sidebars,
footers, scripts, styles, forms and hidden elements are never read, whether marked by their
element (``nav``, ``aside``, ``footer``...), their role (``navigation``, ``banner``...),
the hidden attributes, or the class names page generators give them (Sphinx's
``sphinxsidebar``, MkDocs' ``md-header``, texinfo's ``nav-panel``: a class word starting
or ending with nav, menu, sidebar, header, footer...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser

from app.text.documents.blocks import FENCE_TYPES, Part, transcript_type
from app.text.documents.document import HTML, PLAIN, BlockKind
from app.text.documents.inline import ReadingBuilder
from app.text.documents.lines import ContentLines
from app.text.primitives import normalize_space

_VOID = frozenset(
    "area base br col embed hr img input keygen link meta param source track wbr".split()
)
_BLOCK = frozenset(
    """address article aside blockquote body caption center dd details dialog dir div dl
    dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li
    main menu nav ol p pre section summary table tbody td tfoot th thead tr ul legend
    option optgroup select textarea iframe video audio canvas svg math noscript template
    script style""".split()
)
"""Elements whose start or end ends a run of inline text."""
_CLOSES_P = frozenset(
    """address article aside blockquote center details dialog dir div dl fieldset figcaption
    figure footer header hgroup main menu nav ol p search section summary ul h1 h2 h3 h4 h5
    h6 pre listing form li dd dt plaintext table hr xmp""".split()
)
"""Start tags that close an open ``<p>`` (HTML's "close a p element")."""
_SCOPE = frozenset("applet caption html table td th marquee object template button".split())
_IMPLIED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), _SCOPE | {"ul", "ol"}),
    "dt": (frozenset({"dt", "dd"}), _SCOPE | {"dl"}),
    "dd": (frozenset({"dt", "dd"}), _SCOPE | {"dl"}),
    "tr": (frozenset({"tr", "td", "th"}), frozenset({"table"})),
    "td": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "th": (frozenset({"td", "th"}), frozenset({"tr", "table"})),
    "thead": (frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}), frozenset({"table"})),
    "tbody": (frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}), frozenset({"table"})),
    "tfoot": (frozenset({"thead", "tbody", "tfoot", "tr", "td", "th"}), frozenset({"table"})),
    "option": (frozenset({"option"}), frozenset({"select", "datalist"})),
}
"""A start tag that closes an open element: (what it closes, what stops the search)."""
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_NOT_EVIDENCE = frozenset(
    """head nav aside header footer menu script style noscript template form button
    select option textarea input label iframe svg math canvas object embed audio video
    dialog map datalist fieldset""".split()
)
_NOT_EVIDENCE_ROLES = frozenset(
    """navigation banner contentinfo complementary search menu menubar toolbar dialog
    alertdialog tablist""".split()
)
_BOILERPLATE_WORDS = (
    "nav", "menu", "sidebar", "header", "footer", "breadcrumb", "banner", "cookie",
    "pagination", "pager", "toolbar", "masthead", "skip", "related", "toc",
)  # fmt: skip
_HIDDEN_CLASSES = frozenset(
    {"hidden", "sr-only", "visually-hidden", "visuallyhidden", "screen-reader-text", "d-none"}
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_CLASS_WORD = re.compile(r"[a-z0-9]+")
_LANGUAGE = re.compile(r"(?:language|lang|highlight)-([\w+-]+)")
_CODE = frozenset({"code", "kbd", "samp", "tt"})
_NO_PROSE = frozenset({"dt", "figcaption", "caption", "summary", "legend", "label"})
_WHITESPACE = re.compile(r"\s+")


def _not_evidence(tag: str, attrs: dict[str, str]) -> bool:
    """Whether an element is no evidence by what it is: navigation, a script, hidden."""
    if tag in _NOT_EVIDENCE or "hidden" in attrs:
        return True
    if attrs.get("role", "").lower() in _NOT_EVIDENCE_ROLES:
        return True
    if attrs.get("aria-hidden", "").lower() == "true":
        return True
    if _HIDDEN_STYLE.search(attrs.get("style", "")):
        return True
    return bool(_HIDDEN_CLASSES.intersection(attrs.get("class", "").lower().split()))


def _boilerplate_class(attrs: dict[str, str]) -> bool:
    """Whether an element's class names it navigation or decoration (``md-header``...)."""
    return any(
        word.startswith(_BOILERPLATE_WORDS) or word.endswith(_BOILERPLATE_WORDS)
        for word in _CLASS_WORD.findall(attrs.get("class", "").lower())
    )


def _main(tag: str, attrs: dict[str, str]) -> bool:
    return tag == "main" or attrs.get("role", "").lower() == "main"


class _Tokens(HTMLParser):
    """The page's tokens in order, each with its source offset (its end: the next start)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=False)
        self.line_starts = [0, *(at + 1 for at, char in enumerate(text) if char == "\n")]
        self.tokens: list[tuple[str, int, str, dict[str, str]]] = []
        self.feed(text)
        self.close()

    def _add(self, kind: str, name: str = "", attrs: dict[str, str] | None = None) -> None:
        line, column = self.getpos()
        self.tokens.append((kind, self.line_starts[line - 1] + column, name, attrs or {}))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add("start", tag, {name: value or "" for name, value in attrs})

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add("empty", tag, {name: value or "" for name, value in attrs})

    def handle_endtag(self, tag: str) -> None:
        self._add("end", tag)

    def handle_data(self, data: str) -> None:
        self._add("text")

    def handle_entityref(self, name: str) -> None:
        self._add("ref")

    def handle_charref(self, name: str) -> None:
        self._add("ref")

    def handle_comment(self, data: str) -> None:
        self._add("markup")

    def handle_decl(self, decl: str) -> None:
        self._add("markup")

    def handle_pi(self, data: str) -> None:
        self._add("markup")

    def unknown_decl(self, data: str) -> None:
        self._add("markup")


@dataclass
class _Open:
    """An open element and what it makes of the text inside it."""

    tag: str
    start: int
    attrs: dict[str, str]
    hidden: bool
    """No evidence by what it is, or inside such an element."""
    by_class: bool
    """No evidence by its class names, or inside such an element."""
    main: bool
    """Inside the main content (when the page marks it)."""


@dataclass
class _Run:
    """Inline text between two block boundaries, as it is read."""

    builder: ReadingBuilder
    kind: BlockKind | None
    level: int
    start: int
    end: int
    seen: dict[str, int] = field(default_factory=lambda: {"text": 0, "link": 0, "code": 0})


def html_parts(text: str, starts: list[int], ends: list[int]) -> tuple[str | None, list[Part]]:
    """The title (first ``<h1>``, else ``<title>``) and the main content's leaf blocks.

    Class names are a guess: when they hide every paragraph of a page (a wrapper's
    ``has-sidebar``), the page is read again without them.
    """
    tokens = _Tokens(text).tokens
    reader = _Reader(text, classes=True)
    reader.read(tokens)
    if not any(part.reading is not None for part in reader.parts):
        again = _Reader(text, classes=False)
        again.read(tokens)
        if any(part.reading is not None for part in again.parts):
            reader = again
    return reader.title or reader.page_title, reader.parts


class _Reader:
    """Walks the tokens with the open elements, turning runs of text into Parts."""

    def __init__(self, text: str, *, classes: bool) -> None:
        self.text = text
        self.classes = classes
        self.mapping = ContentLines([0], [0], [len(text)])
        self.stack: list[_Open] = []
        self.parts: list[Part] = []
        self.title: str | None = None
        self.page_title: str | None = None
        self.title_text: list[str] | None = None
        self.headings: list[tuple[int, str]] = []
        self.section: tuple[str, ...] = ()
        self.run: _Run | None = None
        self.markup: list[tuple[int, int]] = []
        """Inline tags seen since the last block boundary, before any text."""
        self.images = 0
        self.leaf: tuple[str, int, str] | None = None
        """An open ``pre`` or ``table``: its tag, its start and its media type."""
        self.layout: set[int] = set()
        """Where the tables that lay out the page start: their cells are read as blocks."""
        self.scope: str | None = None
        """"main" or "article" when the page marks its main content so, else None."""

    def read(self, tokens: list[tuple[str, int, str, dict[str, str]]]) -> None:
        """Every token, in order; a token ends where the next one starts."""
        starts = [(name, attrs) for kind, _, name, attrs in tokens if kind in ("start", "empty")]
        if any(_main(name, attrs) for name, attrs in starts):
            self.scope = "main"
        elif any(name == "article" for name, _ in starts):
            self.scope = "article"
        self.layout = _layout_tables(tokens)
        for index, (kind, start, name, attrs) in enumerate(tokens):
            end = tokens[index + 1][1] if index + 1 < len(tokens) else len(self.text)
            if kind in ("start", "empty"):
                self.start_tag(name, attrs, start, end)
                if kind == "empty" and name not in _VOID:
                    self.end_tag(name, end, end)
            elif kind == "end":
                self.end_tag(name, start, end)
            else:
                self.inline(kind, start, end)
        self.flush()
        if self.leaf is not None:
            self.close_leaf(len(self.text))

    # -- elements --------------------------------------------------------------------

    def start_tag(self, tag: str, attrs: dict[str, str], start: int, end: int) -> None:
        if self.leaf is None:
            if tag in _CLOSES_P:
                self.close_implied(frozenset({"p"}), _SCOPE, start)
            if tag in _IMPLIED:
                self.close_implied(*_IMPLIED[tag], start)
            if tag in _HEADINGS and self.stack and self.stack[-1].tag in _HEADINGS:
                self.pop_to(len(self.stack) - 1, start)
        if tag == "title" and self.page_title is None:
            self.title_text = []  # the page's, not an icon's
        if self.leaf is None:
            if tag in _BLOCK:
                self.flush()
            elif tag == "br" and self.run is not None and self.visible():
                self.space(self.run, start, end)  # a line break reads as a space, as in markdown
            else:  # inside its parent: a hidden span's tags are markup of the run around it
                self.inline("markup", start, end, tag)
        self.push(tag, attrs, start)
        if self.leaf is None and self.visible() and self.in_scope():
            if tag == "pre" or tag == "table" and start not in self.layout:
                self.leaf = (tag, start, _code_type(attrs) if tag == "pre" else HTML)
        if tag in _VOID:
            self.stack.pop()

    def push(self, tag: str, attrs: dict[str, str], start: int) -> None:
        parent = self.stack[-1] if self.stack else None
        hidden = bool(parent and parent.hidden)
        if not (tag == "header" and parent and parent.main):  # an article's header is its own
            hidden = hidden or _not_evidence(tag, attrs)
        scope = _main(tag, attrs) if self.scope == "main" else tag == "article"
        by_class = bool(parent and parent.by_class)  # the main content is never decoration
        if scope or tag in ("html", "body"):
            by_class = False
        elif self.classes and not by_class:
            by_class = _boilerplate_class(attrs)
        main = scope or bool(parent and parent.main)
        self.stack.append(_Open(tag, start, attrs, hidden, by_class, main))

    def end_tag(self, tag: str, start: int, end: int) -> None:
        depth = next(
            (at for at in range(len(self.stack) - 1, -1, -1) if self.stack[at].tag == tag), None
        )
        if depth is None:
            return  # nothing open to close: a stray end tag (``</br>`` included)
        if self.leaf is None and tag in _BLOCK:
            self.flush()
        self.pop_to(depth, start, end)
        if self.leaf is None and tag not in _BLOCK:
            self.inline("markup", start, end, tag)

    def pop_to(self, depth: int, start: int, end: int | None = None) -> None:
        """Close the elements from the top of the stack down to ``depth``.

        An element closed by its own end tag ends at that tag's end; one closed because
        another ends or starts ends where that tag starts.
        """
        while len(self.stack) > depth:
            closed = self.stack.pop()
            if closed.tag == "title" and self.title_text is not None:
                self.page_title = normalize_space("".join(self.title_text)) or None
                self.title_text = None
            if self.leaf is not None and (closed.tag, closed.start) == self.leaf[:2]:
                own = end is not None and len(self.stack) == depth
                self.close_leaf(end if own and end is not None else start)
            elif closed.tag in _BLOCK and self.leaf is None:
                self.flush()

    def close_implied(self, closes: frozenset[str], stops: frozenset[str], start: int) -> None:
        """Close the nearest open element of ``closes``, unless one of ``stops`` is nearer."""
        for depth in range(len(self.stack) - 1, -1, -1):
            tag = self.stack[depth].tag
            if tag in closes:
                self.flush()
                self.pop_to(depth, start)
                return
            if tag in stops:
                return

    def close_leaf(self, end: int) -> None:
        assert self.leaf is not None
        tag, start, media = self.leaf
        self.leaf = None
        kind: BlockKind = "code" if tag == "pre" else "table"
        self.parts.append(Part(kind, start, end, self.section, media))

    def visible(self) -> bool:
        return not (self.stack and (self.stack[-1].hidden or self.stack[-1].by_class))

    def in_scope(self) -> bool:
        return self.scope is None or bool(self.stack and self.stack[-1].main)

    # -- text ------------------------------------------------------------------------

    def inline(self, kind: str, start: int, end: int, tag: str = "") -> None:
        """A text, entity, inline tag or comment inside the current run."""
        raw = self.text[start:end]
        if self.title_text is not None and kind in ("text", "ref"):
            self.title_text.append(unescape(raw))
        if self.leaf is not None or not self.visible() or not self.in_scope():
            return
        if kind == "markup":
            if self.run is None:
                self.markup.append((start, end))  # taken in if text follows
                self.images += tag == "img"
            else:
                self.run.builder.hide(start, end)
                self.run.end = end
                self.run.seen["link"] += tag == "img"
            return
        shown = raw if kind == "text" else unescape(raw)
        if shown.isspace():
            if self.run is not None:
                self.space(self.run, start, end)
            return
        run = self.run or self.begin(start)
        if kind == "text":
            self.show_text(run, raw, start)
        else:
            run.builder.show(shown, start, end, False)
            self.count(run, shown)
            run.end = end

    def begin(self, start: int) -> _Run:
        """A run starting with text at ``start``, taking in the inline tags just before it."""
        kind, level = self.container()
        first = self.markup[0][0] if self.markup else start
        run = _Run(ReadingBuilder(self.text), kind, level, first, start)
        for tag_start, tag_end in self.markup:
            run.builder.hide(tag_start, tag_end)
        run.seen["link"] += self.images
        self.markup, self.images = [], 0
        self.run = run
        return run

    def show_text(self, run: _Run, raw: str, start: int) -> None:
        """Words as they are, each stretch of whitespace as one space."""
        position = 0
        for match in _WHITESPACE.finditer(raw):
            if match.start() > position:
                self.word(run, raw[position : match.start()], start + position)
            self.space(run, start + match.start(), start + match.end())
            position = match.end()
        if position < len(raw):
            self.word(run, raw[position:], start + position)

    def word(self, run: _Run, piece: str, start: int) -> None:
        run.builder.show(piece, start, start + len(piece), True)
        self.count(run, piece)
        run.end = start + len(piece)

    def space(self, run: _Run, start: int, end: int) -> None:
        """Whitespace shows as one space, and none at the start of a run."""
        parts = run.builder.parts
        if parts and not parts[-1].endswith(" "):
            run.builder.show(" ", start, end, False)

    def count(self, run: _Run, shown: str) -> None:
        """Letters shown as text, as a link's or as code's: a link-only run is no prose."""
        letters = sum(char.isalnum() for char in shown)
        tags = {element.tag for element in self.stack}
        where = "link" if "a" in tags else "code" if tags & _CODE else "text"
        run.seen[where] += letters

    def container(self) -> tuple[BlockKind | None, int]:
        """The kind of block text starting now sits in (its heading level, if a heading)."""
        for element in reversed(self.stack):
            tag = element.tag
            if tag in _HEADINGS:
                return "heading", int(tag[1])
            if tag in _NO_PROSE:
                return None, 0
            if tag in ("li", "dd"):
                return "list_item", 0
            if tag == "blockquote":
                return "quote", 0
        return "paragraph", 0

    def flush(self) -> None:
        """End the current run: a block, if it shows anything."""
        run, self.run = self.run, None
        self.markup, self.images = [], 0
        if run is None or run.kind is None:
            return
        reading = run.builder.reading()
        plain = reading.plain.strip()
        if not plain:
            return
        start, end = run.start, run.end
        if run.kind == "heading":
            self.heading(run.level, plain, start, end)
        elif not run.seen["text"]:
            shape: BlockKind = "code" if run.seen["code"] and not run.seen["link"] else "media"
            self.parts.append(Part(shape, start, end, self.section, HTML))
        elif (media := transcript_type([plain])) is not None:
            self.parts.append(Part("code", start, end, self.section, media))
        else:
            self.parts.append(Part(run.kind, start, end, self.section, None, reading, self.mapping))

    def heading(self, level: int, name: str, start: int, end: int) -> None:
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        name = normalize_space(name)
        self.headings.append((level, name))
        self.section = tuple(heading for _, heading in self.headings)
        if level == 1 and self.title is None:
            self.title = name
        self.parts.append(Part("heading", start, end, self.section))


def _layout_tables(tokens: list[tuple[str, int, str, dict[str, str]]]) -> set[int]:
    """Where the tables that lay out the page start, not tables of data.

    Such a table is marked ``role="presentation"``, or has one column, or holds headings
    or other tables: it frames the page, as pages were built before CSS. A table of data
    has columns (and Sphinx puts a ``<p>`` in each cell).
    """
    layout: set[int] = set()
    open_tables: list[list[int]] = []  # start, cells in this row, most cells in a row
    for kind, start, name, attrs in tokens:
        if kind == "start" and (name in _HEADINGS or name == "table"):
            layout.update(table[0] for table in open_tables)
        if kind == "start" and name == "table":
            open_tables.append([start, 0, 0])
            if attrs.get("role", "").lower() in ("presentation", "none"):
                layout.add(start)
        elif kind == "start" and name == "tr" and open_tables:
            open_tables[-1][1] = 0
        elif kind == "start" and name in ("td", "th") and open_tables:
            table = open_tables[-1]
            table[1] += 1
            table[2] = max(table[2], table[1])
        elif kind == "end" and name == "table" and open_tables:
            table = open_tables.pop()
            if table[2] <= 1:
                layout.add(table[0])
    layout.update(table[0] for table in open_tables if table[2] <= 1)
    return layout


def _code_type(attrs: dict[str, str]) -> str:
    """A code block's media type from its class (``language-python``, ``highlight-sh``)."""
    match = _LANGUAGE.search(attrs.get("class", "").lower())
    return FENCE_TYPES.get(match.group(1), PLAIN) if match else PLAIN
