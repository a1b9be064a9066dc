"""What a reader sees of a paragraph's inline markdown, and where each character sits.

markdown-it's text tokens are verbatim source (see ``blocks._parser``); walking them through
the content with a cursor ties the reader's text back to offsets, and records the hidden
syntax so a sentence can take the markup touching its ends.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from markdown_it.token import Token

_DELIMITERS = frozenset({"em_open", "em_close", "strong_open", "strong_close"})


class Reading:
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
        """The content offset of the plain character at ``plain``."""
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


def plain_reading(content: str) -> Reading:
    """Content without inline syntax: line breaks read as spaces, as markdown-it reads them.

    Spaces before a line break and indentation after it are not shown (markdown-it drops
    them from its text tokens), so they are left out here too.
    """
    if "\n" not in content:
        return Reading(content, [(0, 0, len(content), True)], {}, {})
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
    return Reading("".join(parts), pieces, {}, {})


class Misaligned(Exception):
    """The parsed text could not be found in the content in order (never seen; kept safe)."""


class ReadingBuilder:
    """A reading built left to right: what shows, where it sits, and the markup hidden."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.parts: list[str] = []
        self.length = 0
        self.pieces: list[tuple[int, int, int, bool]] = []
        self.after: dict[int, int] = {}
        self.before: dict[int, int] = {}

    def find(self, needle: str, position: int) -> int:
        """Where ``needle`` next sits in the content; Misaligned when it does not."""
        if self.content.startswith(needle, position):
            return position
        found = self.content.find(needle, position)
        if found < 0:
            raise Misaligned(needle)
        return found

    def show(self, plain: str, start: int, end: int, linear: bool) -> None:
        """Text a reader sees, read from content [start, end) (char for char if linear)."""
        if plain:
            self.pieces.append((self.length, start, end, linear))
            self.parts.append(plain)
            self.length += len(plain)

    def hide(self, start: int, end: int) -> None:
        """Markup a reader does not see, which a sentence touching it may take in."""
        if start < end:
            self.after[start] = end
            self.before[end] = start

    def reading(self) -> Reading:
        """The reading built so far."""
        return Reading("".join(self.parts), self.pieces, self.after, self.before)


def read_or_fallback(content: str, children: Sequence[Token]) -> Reading:
    """The reading of inline content, or the raw content when its tokens cannot be placed."""
    try:
        return _read_inline(content, children)
    except Misaligned:  # raw content: offsets stay exact, plain keeps the markup
        flat = content.replace("\n", " ")
        return Reading(flat, [(0, 0, len(flat), True)], {}, {})


def _read_inline(content: str, children: Sequence[Token]) -> Reading:
    """Walk the inline tokens through the content with a cursor, recording what shows."""
    out = ReadingBuilder(content)
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
            raise Misaligned("`")
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
    raise Misaligned("]")


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
