"""Code examples: the code block a prose sentence introduces, and the code a reader sees in it.

A how-to's answer is often a command: "To start a worker, run the following command:" and
the block under it. The sentence says nothing without its block, and the block is no
sentence, so the two go together: a sentence introduces an example when it ends with a
colon (or, in plain text, with vim's `` >`` marker after it) and is the last of its block,
and its example is the code block right after it in the same section (in plain text, with
the code blocks after that one that only blank lines part from it, as the plain reader
cuts an example at blank lines).

The example keeps its exact span in the source, as a sentence does; what a reader sees of
it is derived from those bytes by one rule per format, which the Reviewer applies again:

- Markdown: the lines inside the fence (or of an indented block), each without what its
  first line has before the code (container markers and indentation);
- reStructuredText and plain text: the block's lines without their common indentation,
  as docutils reads a literal block;
- HTML: the text of the block as a browser shows it, tags left out and entities read; in
  ``<pre>`` its lines as they are, elsewhere each run of whitespace as one space.

Trailing spaces and the blank lines around the code are not shown.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from app.text.documents.document import HTML, MARKDOWN, PLAIN, Document, ProseSentence

INTRODUCING_ENDS = (":", "：")
"""How a sentence that introduces what follows it ends."""
_VIM_MARKER = re.compile(r"[ \t]+>[a-z]*[ \t]*(?:\r\n|\r|\n|$)")
"""vim's `` >`` (or `` >vim``) after a sentence: an example follows, however it ends."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FENCE = re.compile(r"(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Example:
    """A code example in a source: its exact span, and the code a reader sees there."""

    start: int
    end: int
    code: str
    media_type: str


def introduces(text: str, sentence: ProseSentence, media_type: str) -> bool:
    """Whether the sentence of ``text`` introduces what follows it (says nothing alone)."""
    if sentence.plain.endswith(INTRODUCING_ENDS):
        return True
    return media_type == PLAIN and _VIM_MARKER.match(text, sentence.end) is not None


def example_after(document: Document, sentence: ProseSentence, media_type: str) -> Example | None:
    """The code example the sentence introduces, if it introduces one.

    ``media_type`` is the document's: ``text/markdown``, ``text/x-rst``, ``text/html``...
    """
    if not introduces(document.text, sentence, media_type):
        return None
    after = sentence.index + 1
    if after < len(document.sentences) and document.sentences[after].block == sentence.block:
        return None  # not the last sentence of its block: what follows it is prose
    blocks = document.blocks
    first = last = sentence.block + 1
    if first >= len(blocks) or blocks[first].kind != "code":
        return None
    if blocks[first].section != sentence.section:
        return None
    while media_type == PLAIN and last + 1 < len(blocks):
        following = blocks[last + 1]
        between = document.text[blocks[last].end : following.start]
        if following.kind != "code" or following.section != sentence.section:
            break
        if between.strip():
            break
        last += 1
    start, end = blocks[first].start, blocks[last].end
    code = shown_code(document.text, start, end, media_type)
    if not code:
        return None
    media = blocks[first].media_type
    return Example(start, end, code, PLAIN if media in (None, HTML, MARKDOWN) else media)


def shown_code(text: str, start: int, end: int, media_type: str) -> str:
    """The code a reader sees in the code block(s) at ``text[start:end]``."""
    if media_type == HTML:
        return _html_code(text[start:end])
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    lines = _LINE_BREAK.split(text[line_start:end])
    if media_type == MARKDOWN:
        lines = _markdown_lines(lines, text[line_start:start])
    else:
        indents = [line[: len(line) - len(line.lstrip())] for line in lines if line.strip()]
        common = len(os.path.commonprefix(indents)) if indents else 0
        lines = [line[common:] for line in lines]
    return _tidy(lines)


def _markdown_lines(lines: list[str], prefix: str) -> list[str]:
    """The code lines of a markdown block whose first line has ``prefix`` before its code."""
    lines = [_cut(line, prefix) for line in lines]
    fence = _FENCE.match(lines[0])
    if fence is None:
        return lines
    mark = fence.group(1)
    body = lines[1:]
    if body and set(body[-1].strip()) == {mark[0]} and len(body[-1].strip()) >= len(mark):
        body = body[:-1]
    return body


def _cut(line: str, prefix: str) -> str:
    """A line without the container markers and indentation its block's first line has."""
    if line.startswith(prefix):
        return line[len(prefix) :]
    bare = prefix.rstrip()
    if bare.strip() and line.startswith(bare):  # a quote's empty line: ">"
        return line[len(bare) :].lstrip(" \t")
    cut = 0
    while cut < min(len(prefix), len(line)) and line[cut] in " \t":
        cut += 1
    return line[cut:]


class _ShownText(HTMLParser):
    """The text a browser shows of an HTML fragment: tags left out, entities read."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.parts.append("\n")


def _html_code(fragment: str) -> str:
    reader = _ShownText()
    reader.feed(fragment)
    reader.close()
    shown = "".join(reader.parts)
    if not fragment.lower().startswith("<pre"):
        return " ".join(shown.split())  # not preformatted: whitespace reads as one space
    return _tidy(_LINE_BREAK.split(shown))


def _tidy(lines: list[str]) -> str:
    """The lines without trailing spaces, and without blank lines around them."""
    kept = [line.rstrip() for line in lines]
    while kept and not kept[0]:
        kept.pop(0)
    while kept and not kept[-1]:
        kept.pop()
    return "\n".join(kept)
