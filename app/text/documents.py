"""Documents read as documents: blocks by kind, and prose sentences with exact offsets.

Research quotes sentences from the corpus and the reviewer checks every quote against the
source bytes, so a sentence must be prose a reader sees as one: never a code fence, a shell
prompt, a table row, a badge line, HTML or a BibTeX entry, and never half of "e.g.".
Markdown blocks come from markdown-it-py (CommonMark plus tables); sentences are cut by
sentencex, chosen over pysbd by ``bench/sentence_segmenters.py`` (as right on our text,
hundreds of times faster). Every sentence keeps the exact source span it was read from.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, Literal, NamedTuple

import sentencex
from markdown_it import MarkdownIt
from markdown_it.token import Token

from app.text.primitives import normalize_space
from graphs.markdown import CJK

__all__ = [
    "MARKDOWN",
    "PLAIN",
    "PROSE_KINDS",
    "Block",
    "BlockKind",
    "Document",
    "ProseSentence",
    "read_document",
]

BlockKind = Literal["heading", "paragraph", "list_item", "quote", "code", "table", "html", "media"]
PROSE_KINDS: frozenset[BlockKind] = frozenset({"paragraph", "list_item", "quote"})
"""The kinds whose sentences are quotable prose."""

MARKDOWN = "text/markdown"
PLAIN = "text/plain"

_FENCE_TYPES = {
    "python": "text/x-python",
    "py": "text/x-python",
    "python3": "text/x-python",
    "pycon": "text/x-python",
    "bash": "text/x-shellscript",
    "sh": "text/x-shellscript",
    "shell": "text/x-shellscript",
    "console": "text/x-shellscript",
    "zsh": "text/x-shellscript",
    "shell-session": "text/x-shellscript",
    "bibtex": "application/x-bibtex",
    "bib": "application/x-bibtex",
}
_SHELL_PROMPTS = ("$ ", "> $", "PS> ", "C:\\>")
_PYTHON_PROMPT = ">>> "
_BIBTEX = re.compile(r"@[A-Za-z]+\s*\{")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FRONT_MATTER = re.compile(r"---[ \t]*(?:\r\n|\r|\n)")
_CONTAINER_MARKER = re.compile(r"[ \t]*(?:>[ \t]?|(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))")
_INLINE_SYNTAX = re.compile(r"[\\`*_\[<&]")
"""Characters that can open CommonMark inline syntax; content without them is plain text."""
_CJK_CHAR = re.compile(f"[{CJK}]")
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
_LETTER = re.compile(r"[^\W\d_]")
_DELIMITERS = frozenset({"em_open", "em_close", "strong_open", "strong_close"})


@dataclass(frozen=True, slots=True)
class Block:
    """One leaf block of a document; containers (lists, quotes) only give it its kind."""

    kind: BlockKind
    start: int
    end: int
    first_line: int
    last_line: int
    section: tuple[str, ...]
    media_type: str | None = None

    @property
    def prose(self) -> bool:
        """Whether its sentences may be quoted as prose."""
        return self.kind in PROSE_KINDS


@dataclass(frozen=True, slots=True)
class ProseSentence:
    """A prose sentence: the exact source span, and what a reader sees of it."""

    text: str
    plain: str
    start: int
    end: int
    index: int
    block: int
    position: int
    section: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Document:
    """A text read once: its blocks, its prose sentences, and a line index for provenance."""

    text: str
    title: str | None
    blocks: tuple[Block, ...]
    sentences: tuple[ProseSentence, ...]
    _line_starts: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _block_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._line_starts:
            object.__setattr__(self, "_line_starts", tuple(_line_bounds(self.text)[0]))
        object.__setattr__(self, "_block_starts", tuple(block.start for block in self.blocks))

    def block_at(self, start: int, end: int) -> Block | None:
        """The block containing [start, end), so a quote can say what kind of text it is."""
        self._check(start, end)
        index = bisect_right(self._block_starts, start) - 1
        if index >= 0 and end <= self.blocks[index].end:
            return self.blocks[index]
        return None

    def lines_of(self, start: int, end: int) -> tuple[int, int]:
        """1-based first and last line of a span, counting line breaks as markdown-it does."""
        self._check(start, end)
        return _lines(self._line_starts, start, end)

    def _check(self, start: int, end: int) -> None:
        if not 0 <= start <= end <= len(self.text):
            raise ValueError(f"span [{start}, {end}) is not inside a text of {len(self.text)}")


@lru_cache(maxsize=64)
def read_document(text: str, media_type: str = MARKDOWN) -> Document:
    """Blocks and prose sentences of a text; pure, so a corpus file reads the same each time."""
    starts, ends = _line_bounds(text)
    if media_type == MARKDOWN:
        title, parts = _markdown_parts(text, starts, ends)
    elif media_type == PLAIN:
        title, parts = None, _plain_parts(text, starts, ends)
    else:
        raise ValueError(f"cannot read {media_type!r}: only {MARKDOWN} and {PLAIN}")
    blocks: list[Block] = []
    found: list[ProseSentence] = []
    for number, part in enumerate(parts):
        first, last = _lines(starts, part.start, part.end)
        block = Block(part.kind, part.start, part.end, first, last, part.section, part.media)
        blocks.append(block)
        if part.reading is not None and part.lines is not None and block.prose:
            found += _sentences(text, number, block, part.reading, part.lines, len(found))
    return Document(text, title, tuple(blocks), tuple(found), tuple(starts))


# --- lines -------------------------------------------------------------------------------


def _line_bounds(text: str) -> tuple[list[int], list[int]]:
    """Start and end (terminator excluded) of every line, split where markdown-it splits."""
    starts = [0]
    ends: list[int] = []
    if "\r" in text:
        for match in _LINE_BREAK.finditer(text):
            ends.append(match.start())
            starts.append(match.end())
    else:  # the usual case, without a regex
        at = text.find("\n")
        while at >= 0:
            ends.append(at)
            starts.append(at + 1)
            at = text.find("\n", at + 1)
    ends.append(len(text))
    return starts, ends


def _lines(line_starts: Sequence[int], start: int, end: int) -> tuple[int, int]:
    return bisect_right(line_starts, start), bisect_right(line_starts, max(start, end - 1))


class _Lines:
    """Where each line of a paragraph's inline content sits in the text.

    markdown-it gives a paragraph's content with container markers and indentation cut
    from each line, and only a line range for where it came from; each content line is
    the tail of its source line, which is what ties a content offset to a text offset.
    """

    __slots__ = ("content_starts", "text_ends", "text_starts")

    def __init__(
        self, content_starts: list[int], text_starts: list[int], text_ends: list[int]
    ) -> None:
        self.content_starts = content_starts
        self.text_starts = text_starts
        self.text_ends = text_ends

    def offset(self, position: int) -> int:
        line = bisect_right(self.content_starts, position) - 1 if len(self.text_starts) > 1 else 0
        offset = self.text_starts[line] + position - self.content_starts[line]
        return min(offset, self.text_ends[line])


def _content_lines(
    content: str, first_line: int, text: str, starts: list[int], ends: list[int]
) -> _Lines:
    content_starts: list[int] = []
    text_starts: list[int] = []
    text_ends: list[int] = []
    position = 0
    for number, piece in enumerate(content.split("\n")):
        line = min(first_line + number, len(starts) - 1)
        source = text[starts[line] : ends[line]]
        if source.endswith(piece):
            cut = len(source) - len(piece)
        else:  # the last line (trailing spaces stripped), NUL made U+FFFD, a tab expanded
            cut = source.rfind(piece)
            if cut < 0:
                cut = max(len(source) - len(piece), 0)
        content_starts.append(position)
        text_starts.append(starts[line] + cut)
        text_ends.append(ends[line])
        position += len(piece) + 1
    return _Lines(content_starts, text_starts, text_ends)


# --- blocks ------------------------------------------------------------------------------


@cache
def _parser() -> MarkdownIt:
    """CommonMark with tables, built once per process; inline syntax is parsed on demand.

    The core ``inline`` rule is off because most corpus paragraphs have no inline syntax
    at all, and parsing it for every block (table cells included) is a third of the cost.
    ``text_join`` is off so escapes and entities stay their own tokens (``text_special``,
    source spelling in ``markup``): every ``text`` token is then verbatim source, which is
    how the reader's text is tied back to offsets.
    """
    return MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])


def _inline_tokens(content: str, env: dict[str, Any]) -> list[Token]:
    """The inline tokens of one block's content (``env`` holds the link references)."""
    md = _parser()
    tokens: list[Token] = []
    md.inline.parse(content, md, env, tokens)
    return tokens


class _Part(NamedTuple):
    kind: BlockKind
    start: int
    end: int
    section: tuple[str, ...]
    media: str | None = None
    reading: _Reading | None = None
    lines: _Lines | None = None


def _front_matter_lines(text: str, starts: list[int], ends: list[int]) -> int:
    """How many lines a leading ``---`` ... ``---`` block takes (0 when there is none)."""
    if not _FRONT_MATTER.match(text):
        return 0
    for line in range(1, len(starts)):
        if text[starts[line] : ends[line]].rstrip() in ("---", "..."):
            return line + 1
    return 0


def _markdown_parts(
    text: str, starts: list[int], ends: list[int]
) -> tuple[str | None, list[_Part]]:
    skipped = _front_matter_lines(text, starts, ends)
    source = text
    if skipped:  # blank lines keep markdown-it's line numbers those of the text
        source = "\n" * skipped + (text[starts[skipped] :] if skipped < len(starts) else "")
    env: dict[str, Any] = {}
    tokens = _parser().parse(source, env)
    title: str | None = None
    headings: list[tuple[int, str]] = []
    section: tuple[str, ...] = ()
    containers: list[BlockKind] = []
    parts: list[_Part] = []
    for index, token in enumerate(tokens):
        kind = token.type
        if kind == "blockquote_open":
            containers.append("quote")
        elif kind == "list_item_open":
            containers.append("list_item")
        elif kind in ("blockquote_close", "list_item_close"):
            containers.pop()
        elif token.map is None:
            continue
        elif kind == "paragraph_open":
            content = tokens[index + 1].content
            parts.append(
                _paragraph(text, starts, ends, content, env, token.map, containers, section)
            )
        elif kind == "heading_open":
            name = _heading_text(tokens[index + 1].content, env)
            level = int(token.tag[1:])
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, name))
            section = tuple(heading for _, heading in headings)
            if level == 1 and title is None:
                title = name
            start, end = _block_span(text, starts, ends, token.map, len(containers))
            parts.append(_Part("heading", start, end, section))
        elif kind in ("fence", "code_block"):
            start, end = _block_span(text, starts, ends, token.map, len(containers))
            language = token.info.split(maxsplit=1)[0].lower() if token.info.strip() else ""
            parts.append(_Part("code", start, end, section, _FENCE_TYPES.get(language, PLAIN)))
        elif kind in ("table_open", "html_block"):
            start, end = _block_span(text, starts, ends, token.map, len(containers))
            shape: BlockKind = "table" if kind == "table_open" else "html"
            parts.append(_Part(shape, start, end, section, MARKDOWN))
    return title, parts


def _block_span(
    text: str, starts: list[int], ends: list[int], lines: Sequence[int], depth: int
) -> tuple[int, int]:
    """A block's first to last non-blank character, container markers of its first line cut."""
    first, last = lines[0], min(lines[1], len(starts)) - 1
    start, line_end = starts[first], ends[first]
    for _ in range(depth):
        marker = _CONTAINER_MARKER.match(text, start, line_end)
        if marker is None:
            break
        start = marker.end()
    while start < line_end and text[start] in " \t":
        start += 1
    end = ends[max(last, first)]
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _paragraph(
    text: str,
    starts: list[int],
    ends: list[int],
    content: str,
    env: dict[str, Any],
    lines: Sequence[int],
    containers: list[BlockKind],
    section: tuple[str, ...],
) -> _Part:
    """A paragraph as prose, or as the code, table, media or HTML it really is."""
    mapping = _content_lines(content, lines[0], text, starts, ends)
    start, end = mapping.offset(0), mapping.offset(len(content) - 1) + 1
    content_lines = content.split("\n")
    media = _prompt(content_lines)
    if media is None and "quote" in containers:
        # ">>> " parses as three nested quotes: the prompt is in the source lines only
        raw_lines = [text[starts[n] : ends[n]] for n in range(lines[0], lines[1])]
        if (media := _prompt(raw_lines)) is not None:
            start = ends[lines[0]] - len(raw_lines[0].lstrip())
    if media is not None:
        return _Part("code", start, end, section, media)
    if content.startswith("@") and _BIBTEX.match(content):
        return _Part("code", start, end, section, "application/x-bibtex")
    if content.startswith("|") and all(_is_row(line) for line in content_lines):
        return _Part("table", start, end, section, MARKDOWN)
    kind: BlockKind = containers[-1] if containers else "paragraph"
    if _INLINE_SYNTAX.search(content) is None:
        return _Part(kind, start, end, section, None, _plain_reading(content), mapping)
    children = _inline_tokens(content, env)
    shape = _inline_shape(children)
    if shape is not None:
        return _Part(shape, start, end, section, MARKDOWN)
    return _Part(kind, start, end, section, None, _read_or_fallback(content, children), mapping)


def _is_row(line: str) -> bool:
    """A table row written without the table's separator line (``| a | b |``)."""
    line = line.strip()
    return len(line) > 1 and line.startswith("|") and line.endswith("|")


def _prompt(lines: Sequence[str]) -> str | None:
    """The media type of a shell or Python transcript, if a line starts with a prompt."""
    for line in lines:
        line = line.lstrip()
        if line.startswith(_PYTHON_PROMPT):
            return "text/x-python"
        if line.startswith(_SHELL_PROMPTS):
            return "text/x-shellscript"
    return None


def _inline_shape(children: Sequence[Token]) -> Literal["media", "html"] | None:
    """Media for images and links with nothing to read between them, html for tags only.

    Separators with no letter or digit (``|``, ``·``, ``-``) between badges count as
    nothing to read: a badge row is not a sentence.
    """
    depth = 0
    links = tags = False
    for token in children:
        kind = token.type
        if kind == "image":
            links = True
        elif kind == "link_open":
            depth += 1
            links = True
        elif kind == "link_close":
            depth -= 1
        elif depth > 0 or kind in ("softbreak", "hardbreak"):
            continue
        elif kind == "html_inline":
            tags = True
        elif kind in ("text", "text_special") and not any(c.isalnum() for c in token.content):
            continue
        else:
            return None
    if links:
        return "media"
    return "html" if tags else None


def _heading_text(content: str, env: dict[str, Any]) -> str:
    """A heading as a reader sees it, for the title and section paths."""
    if _INLINE_SYNTAX.search(content) is None:
        return normalize_space(content)
    parts: list[str] = []
    for token in _inline_tokens(content, env):
        if token.type in ("text", "text_special", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return normalize_space("".join(parts))


def _plain_parts(text: str, starts: list[int], ends: list[int]) -> list[_Part]:
    """Paragraphs at blank lines: plain text has no other structure to read."""
    parts: list[_Part] = []
    first: int | None = None
    for line in range(len(starts) + 1):
        blank = line == len(starts) or not text[starts[line] : ends[line]].strip()
        if blank and first is not None:
            start, end = _block_span(text, starts, ends, (first, line), 0)
            flat = text[start:end].replace("\r", " ").replace("\n", " ")
            reading = _Reading(flat, [(0, 0, len(flat), True)], {}, {})
            mapping = _Lines([0], [start], [end])
            parts.append(_Part("paragraph", start, end, (), None, reading, mapping))
            first = None
        elif not blank and first is None:
            first = line
    return parts


# --- inline: what a reader sees, and where it sits ----------------------------------------


class _Reading:
    """The reader's text of one paragraph, tied back to its inline content.

    ``pieces`` are (plain start, content start, content end, linear): a linear piece maps
    character to character; an entity or a normalised code span maps as a whole.
    ``markup_after``/``markup_before`` index the hidden syntax units (emphasis markers,
    link brackets and destinations, tags) by start and by end, so a sentence can take the
    markup touching its ends instead of stopping inside ``**bold.**`` or ``[a link](...)``.
    """

    __slots__ = ("markup_after", "markup_before", "piece_starts", "pieces", "plain")

    def __init__(
        self,
        plain: str,
        pieces: list[tuple[int, int, int, bool]],
        markup_after: dict[int, int],
        markup_before: dict[int, int],
    ) -> None:
        self.plain = plain
        self.pieces = pieces
        self.markup_after = markup_after
        self.markup_before = markup_before
        self.piece_starts = [piece[0] for piece in pieces]

    def content_start(self, plain: int) -> int:
        piece_start, start, _, linear = self._piece(plain)
        return start + plain - piece_start if linear else start

    def content_end(self, plain: int) -> int:
        """The content offset after the plain character at ``plain``."""
        piece_start, start, end, linear = self._piece(plain)
        return start + plain - piece_start + 1 if linear else end

    def _piece(self, plain: int) -> tuple[int, int, int, bool]:
        if len(self.pieces) == 1:
            return self.pieces[0]
        return self.pieces[bisect_right(self.piece_starts, plain) - 1]


def _plain_reading(content: str) -> _Reading:
    """Content without inline syntax: line breaks read as spaces, as markdown-it reads them.

    Spaces before a line break and indentation after it are not shown (markdown-it drops
    them from its text tokens), so they are left out here too.
    """
    if "\n" not in content:
        return _Reading(content, [(0, 0, len(content), True)], {}, {})
    parts: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []
    length = position = 0
    lines = content.split("\n")
    for number, line in enumerate(lines):
        lead = len(line) - len(line.lstrip(" \t")) if number else 0
        tail = len(line.rstrip(" ")) if number < len(lines) - 1 else len(line)
        if tail > lead:
            pieces.append((length, position + lead, position + tail, True))
            parts.append(line[lead:tail])
            length += tail - lead
        if number < len(lines) - 1:
            pieces.append((length, position + len(line), position + len(line) + 1, True))
            parts.append(" ")
            length += 1
        position += len(line) + 1
    return _Reading("".join(parts), pieces, {}, {})


class _Misaligned(Exception):
    """The tokens could not be found in the content in order (never seen; kept safe)."""


class _Builder:
    def __init__(self, content: str) -> None:
        self.content = content
        self.parts: list[str] = []
        self.length = 0
        self.pieces: list[tuple[int, int, int, bool]] = []
        self.after: dict[int, int] = {}
        self.before: dict[int, int] = {}

    def find(self, needle: str, position: int) -> int:
        if self.content.startswith(needle, position):
            return position
        found = self.content.find(needle, position)
        if found < 0:
            raise _Misaligned(needle)
        return found

    def show(self, plain: str, start: int, end: int, linear: bool) -> None:
        if plain:
            self.pieces.append((self.length, start, end, linear))
            self.parts.append(plain)
            self.length += len(plain)

    def hide(self, start: int, end: int) -> None:
        if start < end:
            self.after[start] = end
            self.before[end] = start

    def reading(self) -> _Reading:
        return _Reading("".join(self.parts), self.pieces, self.after, self.before)


def _read_or_fallback(content: str, children: Sequence[Token]) -> _Reading:
    try:
        return _read_inline(content, children)
    except _Misaligned:  # raw content: offsets stay exact, plain keeps the markup
        flat = content.replace("\n", " ")
        return _Reading(flat, [(0, 0, len(flat), True)], {}, {})


def _read_inline(content: str, children: Sequence[Token]) -> _Reading:
    """Walk the inline tokens through the content with a cursor, recording what shows."""
    out = _Builder(content)
    position = 0
    autolink = False
    for token in children:
        kind = token.type
        if autolink:  # its text was taken from the source between < and >
            autolink = kind != "link_close"
            continue
        if kind == "text":
            if token.content:
                at = out.find(token.content, position)
                position = at + len(token.content)
                out.show(token.content, at, position, True)
        elif kind == "text_special":
            at = out.find(token.markup, position)
            position = at + len(token.markup)
            if token.info == "escape":
                out.hide(at, at + 1)
                out.show(token.content, at + 1, position, True)
            else:
                out.show(token.content, at, position, False)
        elif kind in ("softbreak", "hardbreak"):
            at = out.find("\n", position)
            out.show(" ", at, at + 1, True)
            position = at + 1
            while position < len(content) and content[position] in " \t":
                position += 1
        elif kind == "code_inline":
            at = out.find(token.markup, position)
            opened = at + len(token.markup)
            closed = _closing_ticks(content, len(token.markup), opened)
            out.hide(at, opened)
            inner = content[opened:closed].replace("\n", " ")
            if inner == token.content:
                out.show(token.content, opened, closed, True)
            elif inner[1:-1] == token.content and inner[:1] == inner[-1:] == " ":
                out.show(token.content, opened + 1, closed - 1, True)
            else:
                out.show(token.content, opened, closed, False)
            position = closed + len(token.markup)
            out.hide(closed, position)
        elif kind in _DELIMITERS:
            at = out.find(token.markup, position)
            position = at + len(token.markup)
            out.hide(at, position)
        elif kind == "link_open" and token.markup == "autolink":
            at = out.find("<", position)
            closed = out.find(">", at)
            out.hide(at, at + 1)
            out.show(content[at + 1 : closed], at + 1, closed, True)
            out.hide(closed, closed + 1)
            position = closed + 1
            autolink = True
        elif kind == "link_open":
            at = out.find("[", position)
            position = at + 1
            out.hide(at, position)
        elif kind == "link_close":
            at = out.find("]", position)
            position = _link_tail(content, at + 1)
            out.hide(at, position)
        elif kind == "image":  # neither shown nor taken into a neighbouring sentence
            at = out.find("![", position)
            position = _link_tail(content, _label_end(content, at + 1))
        elif kind == "html_inline":
            at = out.find(token.content, position)
            position = at + len(token.content)
            out.hide(at, position)
        elif token.content:
            at = out.find(token.content, position)
            position = at + len(token.content)
            out.show(token.content, at, position, True)
    return out.reading()


def _closing_ticks(content: str, width: int, position: int) -> int:
    """Start of the backtick run of exactly ``width`` that closes a code span."""
    while True:
        at = content.find("`" * width, position)
        if at < 0:
            raise _Misaligned("`")
        end = at
        while end < len(content) and content[end] == "`":
            end += 1
        if end - at == width:
            return at
        position = end


def _label_end(content: str, position: int) -> int:
    """After the ``]`` closing the link label whose ``[`` is at ``position``."""
    depth = 0
    while position < len(content):
        char = content[position]
        if char == "\\":
            position += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    raise _Misaligned("]")


def _link_tail(content: str, position: int) -> int:
    """After a link's ``(destination "title")`` or ``[label]``; ``position`` if it has none."""
    size = len(content)
    if position < size and content[position] == "[":
        closed = content.find("]", position)
        return closed + 1 if closed >= 0 else position
    if position >= size or content[position] != "(":
        return position
    at = _skip_space(content, position + 1)
    if at < size and content[at] == "<":
        closed = content.find(">", at)
        at = closed + 1 if closed >= 0 else at + 1
    else:
        depth = 0
        while at < size and not content[at].isspace():
            char = content[at]
            if char == "\\":
                at += 1
            elif char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    break
                depth -= 1
            at += 1
    at = _skip_space(content, at)
    if at < size and content[at] in "\"'(":
        closer = ")" if content[at] == "(" else content[at]
        at += 1
        while at < size and content[at] != closer:
            at += 2 if content[at] == "\\" else 1
        at = _skip_space(content, at + 1)
    if at < size and content[at] == ")":
        return at + 1
    closed = content.find(")", position)
    return closed + 1 if closed >= 0 else position


def _skip_space(content: str, position: int) -> int:
    while position < len(content) and content[position] in " \t\n":
        position += 1
    return position


# --- sentences ---------------------------------------------------------------------------


def _language(plain: str) -> str:
    """The sentencex rules for a paragraph: Japanese or Chinese when most letters are CJK.

    sentencex ships a Japanese module but none for Chinese: "zh" falls back through its
    zh-* codes to the default rules, which end sentences at 。！？ (with a closing 」) and
    keep the English abbreviations for any Latin text inside.
    """
    if plain.isascii() or _CJK_CHAR.search(plain) is None:
        return "en"
    if 2 * len(_CJK_CHAR.findall(plain)) < len(_LETTER.findall(plain)):
        return "en"
    return "ja" if _KANA.search(plain) else "zh"


def _segments(plain: str, language: str) -> list[tuple[int, int]]:
    """Sentence spans of the plain text, surrounding whitespace stripped, none lost.

    ``sentencex.segment`` returns the sentences as consecutive slices of its input; each is
    found from a cursor (cheaper than building ``get_sentence_boundaries``' dicts). Text it
    did not return, were that ever to happen, becomes a sentence rather than vanish.
    """
    cursor = 0
    spans: list[tuple[int, int]] = []
    for piece in sentencex.segment(language, plain):
        at = cursor if plain.startswith(piece, cursor) else plain.find(piece, cursor)
        if at < 0:
            continue
        if at > cursor:
            spans.append((cursor, at))
        cursor = at + len(piece)
        spans.append((at, cursor))
    if cursor < len(plain):
        spans.append((cursor, len(plain)))
    found: list[tuple[int, int]] = []
    for start, end in spans:
        piece = plain[start:end]
        body = piece.lstrip()
        if not body:
            continue
        start += len(piece) - len(body)
        end = start + len(body.rstrip())
        if found and _joined(plain, found[-1][1], start):
            found[-1] = (found[-1][0], end)
        else:
            found.append((start, end))
    return found


def _joined(plain: str, end: int, start: int) -> bool:
    """Whether a boundary the segmenter put between two pieces is no sentence end.

    A Latin stop with no space after it ("ferrule.Reject", "example.com") ends no sentence;
    after a Chinese or Japanese stop no space is the rule, so those boundaries stand.
    """
    return start == end and end > 0 and plain[end - 1] in ".!?" and not plain[end].isspace()


def _seen(body: str) -> str:
    """``normalize_space(body)``, without its regex for the ASCII sentences that need none."""
    if not body.isascii():
        return normalize_space(body)
    if body.isprintable() and "  " not in body:
        return body
    return " ".join(body.split())


def _sentences(
    text: str, number: int, block: Block, reading: _Reading, lines: _Lines, first_index: int
) -> list[ProseSentence]:
    plain = reading.plain
    after, before = reading.markup_after, reading.markup_before
    found: list[ProseSentence] = []
    floor = 0
    for plain_start, plain_end in _segments(plain, _language(plain)):
        start = reading.content_start(plain_start)
        end = reading.content_end(plain_end - 1)
        while end in after:
            end = after[end]
        while start in before and before[start] >= floor:
            start = before[start]
        floor = end
        seen = _seen(plain[plain_start:plain_end])
        if not seen:
            continue
        begin, finish = lines.offset(start), lines.offset(end - 1) + 1
        found.append(
            ProseSentence(
                text[begin:finish],
                seen,
                begin,
                finish,
                first_index + len(found),
                number,
                len(found),
                block.section,
            )
        )
    return found
