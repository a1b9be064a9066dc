"""Blocks of a markdown document by kind, read through markdown-it-py.

A paragraph is prose only when a reader would read it as such: a shell or Python
transcript, a BibTeX entry, a table written without its separator line, a badge row or a
line of tags is the code, table, media or HTML it really is.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import cache
from typing import Any, Literal, NamedTuple

import mdurl
from markdown_it import MarkdownIt
from markdown_it.token import Token

from app.text.documents.document import MARKDOWN, PLAIN, BlockKind
from app.text.documents.inline import Reading, plain_reading, read_or_fallback
from app.text.documents.lines import ContentLines, content_offsets
from app.text.primitives import normalize_space

FENCE_TYPES = {
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
_FRONT_MATTER = re.compile(r"---[ \t]*(?:\r\n|\r|\n)")
_CONTAINER_MARKER = re.compile(r"[ \t]*(?:>[ \t]?|(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$))")
_INLINE_SYNTAX = re.compile(r"[\\`*_\[<&]")
"""Characters that can open CommonMark inline syntax; content without them is plain text."""


_BUILDING = threading.Lock()


@cache
def _parser() -> MarkdownIt:
    """CommonMark with tables, built once per process; inline syntax is parsed on demand.

    The core ``inline`` rule is off because most corpus paragraphs have no inline syntax
    at all, and parsing it for every block (table cells included) is a third of the cost.
    ``text_join`` is off so escapes and entities stay their own tokens (``text_special``,
    source spelling in ``markup``): every ``text`` token is then verbatim source, which is
    how the reader's text is tied back to offsets.

    mdurl (markdown-it's link normaliser) builds each lookup table on first use and
    publishes it before filling it, so research branches parsing at once in their threads
    could index a half-built table (IndexError). markdown-it's rulers do the same with
    their rule caches (an empty chain: "none of the block rules matched"). Both are built
    here, under a lock, before any thread gets the parser.
    """
    with _BUILDING:
        mdurl.encode("")
        mdurl.decode("")
        mdurl.decode("", mdurl.DECODE_DEFAULT_CHARS + "%")
        md = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
        for ruler in (md.core.ruler, md.block.ruler, md.inline.ruler, md.inline.ruler2):
            ruler.getRules("")  # compiles every chain's cache at once
        return md


def _inline_tokens(content: str, env: dict[str, Any]) -> list[Token]:
    """The inline tokens of one block's content (``env`` holds the link references)."""
    md = _parser()
    tokens: list[Token] = []
    md.inline.parse(content, md, env, tokens)
    return tokens


class Part(NamedTuple):
    """A block as read, with the prose reading of its inline content when it has one."""

    kind: BlockKind
    start: int
    end: int
    section: tuple[str, ...]
    media: str | None = None
    reading: Reading | None = None
    lines: ContentLines | None = None


def _front_matter_lines(text: str, starts: list[int], ends: list[int]) -> int:
    """How many lines a leading ``---`` ... ``---`` block takes (0 when there is none)."""
    if not _FRONT_MATTER.match(text):
        return 0
    for line in range(1, len(starts)):
        if text[starts[line] : ends[line]].rstrip() in ("---", "..."):
            return line + 1
    return 0


def markdown_parts(text: str, starts: list[int], ends: list[int]) -> tuple[str | None, list[Part]]:
    """The title (first ``#`` heading) and the leaf blocks, each with its section path."""
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
    parts: list[Part] = []
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
            start, end = block_span(text, starts, ends, token.map, len(containers))
            parts.append(Part("heading", start, end, section))
        elif kind in ("fence", "code_block"):
            start, end = block_span(text, starts, ends, token.map, len(containers))
            language = token.info.split(maxsplit=1)[0].lower() if token.info.strip() else ""
            parts.append(Part("code", start, end, section, FENCE_TYPES.get(language, PLAIN)))
        elif kind in ("table_open", "html_block"):
            start, end = block_span(text, starts, ends, token.map, len(containers))
            shape: BlockKind = "table" if kind == "table_open" else "html"
            parts.append(Part(shape, start, end, section, MARKDOWN))
    return title, parts


def block_span(
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
) -> Part:
    """A paragraph as prose, or as the code, table, media or HTML it really is."""
    mapping = content_offsets(content, lines[0], text, starts, ends)
    start, end = mapping.offset(0), mapping.offset(len(content) - 1) + 1
    content_lines = content.split("\n")
    media = transcript_type(content_lines)
    if media is None and "quote" in containers:
        # ">>> " parses as three nested quotes: the prompt is in the source lines only
        raw_lines = [text[starts[n] : ends[n]] for n in range(lines[0], lines[1])]
        if (media := transcript_type(raw_lines)) is not None:
            start = ends[lines[0]] - len(raw_lines[0].lstrip())
    if media is not None:
        return Part("code", start, end, section, media)
    if content.startswith("@") and _BIBTEX.match(content):
        return Part("code", start, end, section, "application/x-bibtex")
    if content.startswith("|") and all(_is_row(line) for line in content_lines):
        return Part("table", start, end, section, MARKDOWN)
    kind: BlockKind = containers[-1] if containers else "paragraph"
    if _INLINE_SYNTAX.search(content) is None:
        return Part(kind, start, end, section, None, plain_reading(content), mapping)
    children = _inline_tokens(content, env)
    shape = _inline_shape(children)
    if shape is not None:
        return Part(shape, start, end, section, MARKDOWN)
    return Part(kind, start, end, section, None, read_or_fallback(content, children), mapping)


def _is_row(line: str) -> bool:
    """A table row written without the table's separator line (``| a | b |``)."""
    line = line.strip()
    return len(line) > 1 and line.startswith("|") and line.endswith("|")


def transcript_type(lines: Sequence[str]) -> str | None:
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
