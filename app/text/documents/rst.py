"""reStructuredText read as a document: docutils' tree, each block at its source lines.

docutils parses the text and nothing else runs: no transforms (so a reference stays a
reference, a substitution its ``|name|``, a title where it was written), warnings go
nowhere (``report_level`` above every level, no warning stream), and ``include``,
``raw`` and file or URL tables are refused by ``file_insertion_enabled``/``raw_enabled``
off. Roles and default roles a document declares are undone after its parse, so no file
changes how the next one reads; parses take turns, as that state is docutils' globals.

A paragraph node keeps its source lines (``rawsource``, each line the tail of a source
line once indentation and list markers are cut) and its first line number (read from
``RSTState.paragraph``: ``get_source_and_line`` of its first line), so its text ties back
to offsets as a markdown paragraph's does, checked line by line before it is used; a
paragraph whose lines cannot be placed is left out rather than guessed. A section title's
line is that of its underline. Inline markup is walked through the paragraph's lines
with a cursor (``_InlineWalk``): ``*emphasis*``, ``**strong**``, ````literal````,
```link <url>`_``, ``references_``, ``:role:`text```, ``|substitutions|`` (shown as they
are defined) and ``[1]_`` show their text and hide their markup.

Sphinx writes its manuals in directives docutils does not know: ``sphinx.py`` registers
the common ones. Any other unknown directive becomes a docutils error message, and error
messages are never read; a role docutils does not know (``:func:``, ``:ref:``) shows its
text as Sphinx would render it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from functools import cache
from typing import Any, Literal

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser, roles
from docutils.utils import new_document

from app.text.documents import sphinx
from app.text.documents.blocks import FENCE_TYPES, Part, block_span, transcript_type
from app.text.documents.document import MARKDOWN, PLAIN, BlockKind
from app.text.documents.inline import Misaligned, Reading, ReadingBuilder, plain_reading
from app.text.documents.lines import content_offsets, expanded
from app.text.primitives import normalize_space

_LINE_SEPARATORS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ROLE = re.compile(r":[\w.:+-]+:`(?P<a>.*)`|`(?P<b>.*)`:[\w.:+-]+:", re.DOTALL)
_TITLED = re.compile(r"(?P<title>.*\S)\s+<[^<>]+>", re.DOTALL)
_OVERLINE = re.compile(r"([!-/:-@\[-`{-~])\1+\s*")
_PARSING = threading.Lock()
_SHOWN_ONLY_AS_LINKS = (nodes.reference, nodes.footnote_reference, nodes.citation_reference)
_LINK_ROLES = frozenset({"ref", "doc", "numref", "download", "any", "term"})
"""Sphinx roles that link to a page or a term; the others name code (``:func:``...)."""


@cache
def _settings() -> Any:
    """The parser's settings: silent, and never reading a file or raw input."""
    settings = get_default_settings(Parser)
    settings.report_level = 5  # above severe: nothing is reported
    settings.halt_level = 5  # nothing stops the parse
    settings.warning_stream = False
    settings.file_insertion_enabled = False
    settings.raw_enabled = False
    settings.syntax_highlight = "none"
    settings.line_length_limit = 1 << 30  # a corpus file's size limit bounds it already
    settings.pep_references = settings.rfc_references = None
    return settings


def _doctree(source: str) -> nodes.document:
    """The docutils tree of a text (its line separators made spaces: see ``rst_parts``)."""
    source = source.removeprefix("\ufeff")  # a line is a tail of its source line still
    with _PARSING:
        sphinx.register()
        known = dict(roles._roles)
        document = new_document("<corpus file>", _settings())
        try:
            Parser().parse(source, document)
        finally:  # a role a document declared is its own
            roles._roles.clear()
            roles._roles.update(known)
    return document


def rst_parts(text: str, starts: list[int], ends: list[int]) -> tuple[str | None, list[Part]]:
    """The title (first top-level section's) and the leaf blocks, each with its section path.

    Characters ``str.splitlines`` breaks at and ``line_bounds`` does not are read as spaces
    (docutils splits its input so): the text keeps its length, so offsets and line
    numbers hold, and each paragraph line docutils keeps is the tail of its line here.
    """
    source = _LINE_SEPARATORS.sub(" ", text)
    reader = _Reader(source, starts, ends, _doctree(source))
    reader.body(reader.document, "paragraph", ())
    return reader.title, _disjoint(sorted(reader.parts, key=lambda part: part.start))


def _disjoint(parts: list[Part]) -> list[Part]:
    """The parts with no two overlapping: a block that is no prose yields to its neighbour.

    A prose block's span is exact; the lines of a table or a directive are found by their
    shape, and where that shape runs into the next block it is cut short.
    """
    kept: list[Part] = []
    for part in parts:
        if kept and kept[-1].end > part.start:
            previous = kept[-1]
            if previous.reading is None:
                kept[-1] = previous._replace(end=part.start)
            elif part.reading is None:
                part = part._replace(start=previous.end)
        if part.start < part.end:
            kept.append(part)
    return [part for part in kept if part.start < part.end]


class _Reader:
    """Walks the tree, turning each leaf into a Part at its source lines."""

    def __init__(self, text: str, starts: list[int], ends: list[int], document: Any) -> None:
        self.text = text
        self.starts = starts
        self.ends = ends
        self.document = document
        self.title: str | None = None
        self.parts: list[Part] = []

    def body(self, node: nodes.Element, kind: BlockKind, section: tuple[str, ...]) -> None:
        """The blocks of a container, its prose of ``kind``."""
        for child in node.children:
            if isinstance(child, nodes.section):
                self.section(child, section)
            elif isinstance(child, nodes.paragraph):
                self.paragraph(child, kind, section)
            elif isinstance(child, nodes.literal_block | nodes.doctest_block | nodes.math_block):
                self.code(child, section)
            elif isinstance(child, nodes.table | nodes.option_list):
                self.table(child, section)
            elif isinstance(child, nodes.image | nodes.figure | nodes.reference):
                self.leaf("media", self.directive_extent(_line_of(child)), section)
            elif isinstance(child, nodes.bullet_list | nodes.enumerated_list):
                for item in child.children:
                    self.body(item, "list_item", section)
            elif isinstance(child, nodes.definition_list):
                for item in child.children:
                    for part in item.children:
                        if isinstance(part, nodes.definition):
                            self.body(part, "list_item", section)
            elif isinstance(child, nodes.block_quote):
                self.body(child, "quote", section)
            elif isinstance(child, _CONTAINERS):
                self.body(child, kind, section)
            # comments, targets, substitution definitions, field lists, line blocks,
            # citations, titles of non-sections, error messages: nothing to read

    def section(self, node: nodes.section, section: tuple[str, ...]) -> None:
        title = node.children[0] if node.children else None
        if not isinstance(title, nodes.title):
            self.body(node, "paragraph", section)
            return
        name = self.heading(title)
        if self.title is None and node.parent is self.document:
            self.title = name
        path = (*section, name)
        span = self.title_span(title)
        if span is not None:
            self.parts.append(Part("heading", *span, path))
        self.body(node, "paragraph", path)

    def heading(self, title: nodes.title) -> str:
        """A title as a reader sees it, for the title and section paths."""
        try:
            reading, _ = _InlineWalk(title.rawsource, self.document).read(title)
        except Misaligned:
            return normalize_space(title.astext())
        return normalize_space(reading.plain)

    def title_span(self, title: nodes.title) -> tuple[int, int] | None:
        """From the overline (if any) to the underline, whose line docutils records."""
        if title.line is None or title.line < 2:
            return None
        underline = title.line - 1
        first = underline - 1
        if self.line(first).strip() != title.rawsource.strip():
            return None
        if first > 0 and _OVERLINE.fullmatch(self.line(first - 1)):
            first -= 1
        return block_span(self.text, self.starts, self.ends, (first, underline + 1), 0)

    def paragraph(self, node: nodes.paragraph, kind: BlockKind, section: tuple[str, ...]) -> None:
        content = node.rawsource
        lines = content.split("\n")
        first = self.anchor(node.line, lines)
        if first is None or not content.strip():
            return  # not where docutils says: left out rather than guessed
        mapping = content_offsets(content, first, self.text, self.starts, self.ends)
        start, end = mapping.offset(0), mapping.offset(len(content) - 1) + 1
        media = transcript_type(lines)
        if media is not None:
            self.parts.append(Part("code", start, end, section, media))
            return
        try:
            reading, shape = _InlineWalk(content, self.document).read(node)
        except Misaligned:  # raw content: offsets stay exact, plain keeps the markup
            reading, shape = plain_reading(content), None
        if shape is not None:
            media = PLAIN if shape == "code" else MARKDOWN
            self.parts.append(Part(shape, start, end, section, media))
            return
        self.parts.append(Part(kind, start, end, section, None, reading, mapping))

    def code(self, node: nodes.Element, section: tuple[str, ...]) -> None:
        """Code from its first character (a directive's signature: after the ``::``)."""
        lines = node.rawsource.split("\n")
        language = node.get("language", "")
        media = FENCE_TYPES.get(language) or transcript_type(lines)
        if media is None:
            media = "text/x-python" if isinstance(node, nodes.doctest_block) else PLAIN
        if not node.rawsource.strip():
            return
        first = self.anchor(node.line, lines)
        if first is None:
            if node.line is not None:  # a tab expanded inside: the lines are still these
                self.leaf("code", (node.line - 1, node.line + len(lines) - 2), section, media)
            return
        mapping = content_offsets(node.rawsource, first, self.text, self.starts, self.ends)
        start, end = mapping.offset(0), mapping.offset(len(node.rawsource) - 1) + 1
        self.parts.append(Part("code", start, end, section, media))

    def table(self, node: nodes.Element, section: tuple[str, ...]) -> None:
        row = node.line or self.first_row(node)
        if row is None:
            return
        first = row - 1
        shape = self.line(first).strip()
        if shape.startswith("+"):  # a grid table: its rows, up to its last border
            last = below = first
            while below + 1 < len(self.starts) and self.line(below + 1).lstrip()[:1] in ("+", "|"):
                below += 1
                if self.line(below).lstrip().startswith("+"):
                    last = below
        elif shape.startswith("="):  # a simple table: up to a border before a blank line
            last = first + 1
            while last + 1 < len(self.starts) and not (
                set(self.line(last).strip()) <= {"=", " "}
                and self.line(last).strip()
                and not self.line(last + 1).strip()
            ):
                last += 1
        elif isinstance(node, nodes.option_list):
            last = max([first, *(line for _, line in _lines_of(node))])
        else:  # list-table, csv-table: the directive's indented block
            self.leaf("table", self.directive_extent(row), section)
            return
        self.leaf("table", (first, last), section)

    def first_row(self, node: nodes.Element) -> int | None:
        """A table's first line when docutils gives none (before 0.23): above its first cell."""
        cell = next((p for p in node.findall(nodes.paragraph) if p.line is not None), None)
        if cell is None:
            return None
        first: int = cell.line - 1
        if first >= len(self.starts) or cell.rawsource.split("\n")[0] not in self.line(first):
            return None  # a cell of a directive's table, numbered from its own first line
        while first > 0 and self.line(first - 1).strip():
            first -= 1
        return first + 1

    def directive_extent(self, line: int | None) -> tuple[int, int] | None:
        """A directive's lines: its own (1-based ``line``) and those indented under it."""
        if line is None or line > len(self.starts):
            return None
        first = line - 1
        head = self.line(first)
        indent = len(head) - len(head.lstrip())
        last = first
        for number in range(first + 1, len(self.starts)):
            below = self.line(number)
            if not below.strip():
                continue
            if len(below) - len(below.lstrip()) <= indent:
                break
            last = number
        return first, last

    def leaf(
        self,
        kind: BlockKind,
        lines: tuple[int, int] | None,
        section: tuple[str, ...],
        media: str = MARKDOWN,
    ) -> None:
        """A block that is no prose, over whole lines."""
        if lines is None:
            return
        first, last = lines
        if not 0 <= first <= last < len(self.starts):
            return
        start, end = block_span(self.text, self.starts, self.ends, (first, last + 1), 0)
        if start < end:
            self.parts.append(Part(kind, start, end, section, media))

    def anchor(self, line: int | None, lines: list[str]) -> int | None:
        """The 0-based first line of ``lines`` near 1-based ``line``, each a source tail."""
        if line is None:
            return None
        for first in (line - 1, line - 2, line, line - 3, line + 1):
            if 0 <= first and first + len(lines) <= len(self.starts):
                if all(
                    expanded(self.line(first + number)).rstrip().endswith(piece)
                    for number, piece in enumerate(lines)
                ):
                    return first
        return None

    def line(self, number: int) -> str:
        return self.text[self.starts[number] : self.ends[number]]


_CONTAINERS = (
    nodes.Admonition,
    nodes.footnote,
    nodes.topic,
    nodes.sidebar,
    nodes.container,
    nodes.compound,
    nodes.list_item,
)


def _line_of(node: nodes.Element) -> int | None:
    """The line of an image or figure directive (an image's, for one inside a link)."""
    if node.line is None and isinstance(node, nodes.reference) and node.children:
        return _line_of(node.children[0])
    line: int | None = node.line
    return line


def _lines_of(node: nodes.Element) -> Iterator[tuple[int, int]]:
    """First and last 0-based line of each paragraph below a node."""
    for paragraph in node.findall(nodes.paragraph):
        if paragraph.line is not None:
            first = paragraph.line - 1
            yield first, first + paragraph.rawsource.count("\n")


class _InlineWalk:
    """A paragraph's inline nodes walked through its lines: what shows, and where.

    docutils' Text nodes are the source text with each escaping backslash made a NUL
    character; each inline element keeps its source (``rawsource``), in which its
    visible text is found after the opening markup.
    """

    def __init__(self, content: str, document: Any) -> None:
        self.content = content
        self.document = document
        self.out = ReadingBuilder(content)
        self.seen: dict[str, int] = {"text": 0, "link": 0, "literal": 0}

    def read(self, node: nodes.Element) -> tuple[Reading, Literal["media", "code"] | None]:
        """The reading, and "media" or "code" when only links or literals have letters."""
        position = 0
        for child in node.children:
            position = self.child(child, position)
        reading = self.out.reading()
        if self.seen["text"]:
            return reading, None
        if self.seen["link"]:
            return reading, "media"
        return reading, "code" if self.seen["literal"] else None

    def child(self, child: nodes.Node, position: int) -> int:
        if isinstance(child, nodes.Text):
            return self.walk(str(child), position, "text")
        assert isinstance(child, nodes.Element)
        raw = child.rawsource
        visible = child.astext()
        if not raw or not visible and not self.content.startswith(raw, position):
            return position  # a link's embedded target: inside the link's own source
        at = self.out.find(raw, position)
        end = at + len(raw)
        if not visible:
            self.out.hide(at, end)
            return end
        kind = (
            "link"
            if isinstance(child, _SHOWN_ONLY_AS_LINKS)
            else "literal"
            if isinstance(child, nodes.literal)
            else "text"
        )
        if isinstance(child, nodes.footnote_reference | nodes.citation_reference):
            self.out.show(f"[{visible}]", at, end, False)
            self.seen["link"] += 1
        elif isinstance(child, nodes.substitution_reference):
            self.substitution(child, at, end)
        elif isinstance(child, nodes.problematic):
            self.role(raw, at, end)
        elif all(isinstance(grandchild, nodes.Text) for grandchild in child.children):
            self.inline(child, raw, at, end, kind)
        else:  # nested inline markup (a substitution inside a link): shown as a whole
            self.out.show(visible.replace("\n", " "), at, end, False)
            self.seen[kind] += sum(c.isalnum() for c in visible)
        return end

    def inline(self, child: nodes.Element, raw: str, at: int, end: int, kind: str) -> None:
        """Emphasis, a literal, a link, a known role: the text shows, the markup hides."""
        text = "".join(str(grandchild) for grandchild in child.children)
        head = text.split("\x00", 1)[0] or "\\"
        if raw.startswith(":"):  # :role:`text`
            inner = raw.find(head, raw.find("`") + 1)
        else:  # *text*, ``text``, `text`_, text_, _`text`, `text`:role:
            inner = raw.find(head, 1 if raw.startswith("`") else 0)
        try:
            if inner < 0:
                raise Misaligned(head)
            probe = _InlineWalk(self.content, self.document)
            finish = probe.walk(text, at + inner, kind)
            if finish > end:
                raise Misaligned(text)
        except Misaligned:  # a role that shows other text (``:pep:`8```: "PEP 8")
            self.out.show(child.astext().replace("\n", " "), at, end, False)
            self.seen[kind] += sum(c.isalnum() for c in child.astext())
            return
        self.out.hide(at, at + inner)
        self.walk(text, at + inner, kind)
        self.out.hide(finish, end)

    def substitution(self, child: nodes.Element, at: int, end: int) -> None:
        """``|name|`` shows what the document defines it as; an image shows nothing.

        An image's ``astext`` is its alt text (the name, in a definition), so the text is
        taken from the definition's Text nodes.
        """
        name = child.get("refname", child.astext())
        defs = self.document.substitution_defs
        definition = defs.get(name) or defs.get(self.document.substitution_names.get(name.lower()))
        shown = child.astext()
        if definition is not None:
            shown = normalize_space("".join(str(text) for text in definition.findall(nodes.Text)))
        if shown:
            self.out.show(shown, at, end, False)
            self.seen["text"] += sum(c.isalnum() for c in shown)
        else:
            self.out.hide(at, end)
            self.seen["link"] += 1

    def role(self, raw: str, at: int, end: int) -> None:
        """A role docutils does not know (Sphinx's ``:func:``, ``:ref:``): its text shows.

        ``:ref:`title <target>``` shows the title, ``:func:`~a.b.c``` the last name,
        ``:class:`!C``` the name, as Sphinx renders them.
        """
        match = _ROLE.fullmatch(raw)
        if match is None:
            self.out.show(raw.replace("\n", " "), at, end, True)
            self.seen["text"] += 1
            return
        group = "a" if match.group("a") is not None else "b"
        inner, offset = match.group(group), match.start(group)
        titled = _TITLED.fullmatch(inner)
        if titled is not None:
            inner = titled.group("title")
        elif inner.startswith(("~", "!")):
            cut = inner.rfind(".") + 1 if inner.startswith("~") else 1
            inner, offset = inner[cut:], offset + cut
        shown_at = at + offset
        self.out.hide(at, shown_at)
        self.out.show(inner.replace("\n", " "), shown_at, shown_at + len(inner), True)
        self.out.hide(shown_at + len(inner), end)
        name = raw[: match.start(group) - 1] if group == "a" else raw[match.end(group) + 1 :]
        kind = "link" if name.strip(":").split(":")[-1] in _LINK_ROLES else "literal"
        self.seen[kind] += sum(c.isalnum() for c in inner)

    def walk(self, text: str, position: int, kind: str) -> int:
        """Text with NULs for escaping backslashes, matched through the content."""
        content = self.content
        index = 0
        while index < len(text):
            null = text.find("\x00", index)
            piece = text[index:] if null < 0 else text[index:null]
            if piece:
                if not content.startswith(piece, position):
                    raise Misaligned(piece)
                self.out.show(piece.replace("\n", " "), position, position + len(piece), True)
                self.seen[kind] += sum(c.isalnum() for c in piece)
                position += len(piece)
            if null < 0:
                break
            if not content.startswith("\\", position):
                raise Misaligned("\\")
            index = null + 1
            cut = 2 if index < len(text) and text[index] in " \n" else 1  # "\ " shows nothing
            self.out.hide(position, position + cut)
            position += cut
            index += cut - 1
        return position
