"""Lines of a text, and where a paragraph's inline content sits in it.

Lines are split where markdown-it splits them, so a block's line range and a span's line
numbers agree with the parser's.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def line_bounds(text: str) -> tuple[list[int], list[int]]:
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


def line_span(line_starts: Sequence[int], start: int, end: int) -> tuple[int, int]:
    """1-based first and last line of [start, end)."""
    return bisect_right(line_starts, start), bisect_right(line_starts, max(start, end - 1))


class ContentLines:
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
        """The text offset of a content offset (clamped to the end of its line)."""
        line = bisect_right(self.content_starts, position) - 1 if len(self.text_starts) > 1 else 0
        offset = self.text_starts[line] + position - self.content_starts[line]
        return min(offset, self.text_ends[line])


def content_offsets(
    content: str, first_line: int, text: str, starts: list[int], ends: list[int]
) -> ContentLines:
    """Each content line tied to the source line it is the tail of."""
    content_starts: list[int] = []
    text_starts: list[int] = []
    text_ends: list[int] = []
    position = 0
    # markdown-it strips a paragraph's content with str.strip(), which takes a form feed or
    # vertical tab for a space: lines holding only those went with it.
    while first_line < len(starts) - 1 and not text[starts[first_line] : ends[first_line]].strip():
        first_line += 1
    for number, piece in enumerate(content.split("\n")):
        line = min(first_line + number, len(starts) - 1)
        source = text[starts[line] : ends[line]]
        if "\t" in source and not source.endswith(piece) and expanded(source).endswith(piece):
            for at, begins, ends_at in tab_segments(source, len(expanded(source)) - len(piece)):
                content_starts.append(position + at)
                text_starts.append(starts[line] + begins)
                text_ends.append(starts[line] + ends_at)
            position += len(piece) + 1
            continue
        read = source.replace("\x00", "\ufffd")  # as markdown-it reads it: one for one
        if read.endswith(piece):
            cut = len(read) - len(piece)
        else:  # the last line (trailing spaces stripped)
            cut = read.rfind(piece)
            if cut < 0:
                cut = max(len(read) - len(piece), 0)
        content_starts.append(position)
        text_starts.append(starts[line] + cut)
        text_ends.append(ends[line])
        position += len(piece) + 1
    return ContentLines(content_starts, text_starts, text_ends)


TAB_WIDTH = 8
"""docutils' tab stops: it expands every tab of a line before parsing it."""


def expanded(line: str) -> str:
    """A source line as docutils reads it: each tab expanded to the next tab stop."""
    return line.expandtabs(TAB_WIDTH) if "\t" in line else line


def tab_segments(source: str, cut: int) -> list[tuple[int, int, int]]:
    """Where the expanded line's tail from column ``cut`` sits in ``source``, in runs.

    Each run is (its offset in the tail, its start and end in ``source``): text between
    tabs keeps its length, and the spaces a tab became all map to the tab itself.
    """
    runs: list[tuple[int, int, int]] = []
    column = 0
    for index, char in enumerate(source):
        width = TAB_WIDTH - column % TAB_WIDTH if char == "\t" else 1
        if column + width > cut:  # in the tail
            follows = runs and runs[-1][2] == index and "\t" not in (char, source[index - 1])
            if follows:
                runs[-1] = (runs[-1][0], runs[-1][1], index + 1)
            else:
                runs.append((max(column - cut, 0), index, index + 1))
        column += width
    return runs
