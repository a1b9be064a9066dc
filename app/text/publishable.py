r"""What is published is safe to show: no link that runs code, no byte a terminal acts on.

An article is made from corpus sentences, a model's prose and a person's words, and a
corpus may hold ``[here](javascript:…)`` or an escape sequence (``\x1b]8;;…\x07`` makes a
hidden terminal link, ``\x1b[2J`` clears the screen). The article's markdown is made safe
once, where a writer makes it, so what the Reviewer approves is what is published; facts
keep their verbatim quotes and spans, which describe the source, not the article.

Control characters go first, whole escape sequences with them (C0 but tab and newline, DEL,
C1; a carriage return becomes a line break, as markdown reads it). Then markdown-it-py
finds every link destination (inline, reference, autolink, image) and raw HTML: a link whose
scheme is not one a reader may follow keeps its text and loses its target, an image its
source (its alt text stays), an unsafe reference definition goes, and raw HTML is escaped
so it shows as the text it is. The text is parsed again until nothing is left to change.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

from markdown_it import MarkdownIt, rules_inline
from markdown_it.rules_inline import StateInline

from app.text.documents.lines import content_offsets, line_bounds

SAFE_SCHEMES = frozenset({"http", "https", "mailto", "artifact"})
"""Link schemes an article may keep; a link without a scheme (relative, #anchor) is kept too."""

_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clearing the screen
    # OSC, DCS, SOS, PM, APC: printable text up to their terminator
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"  # any other escape
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_WATCHED = ("link", "image", "autolink", "html_inline")
_MADE = frozenset({"link_open", "image", "html_inline"})
"""The token a watched rule makes first (pending text may be pushed before it)."""
_BUILDING = threading.Lock()

Edit = tuple[int, int, str]
"""Replace ``text[start:end]`` by the string."""


class UnplaceableMarkup(ValueError):
    """An unsafe link or tag was found but could not be tied to its bytes (never seen)."""


def publishable(markdown: str) -> str:
    """The markdown with its control characters and unsafe link targets taken out."""
    text = without_controls(markdown)
    while edits := _unsafe_edits(text):
        changed = _apply(text, edits)
        if changed == text:
            raise UnplaceableMarkup(f"unsafe markup at offset {edits[0][0]} cannot be removed")
        text = changed
    return text


def without_controls(text: str) -> str:
    """The text without escape sequences and control characters; tab and newline stay."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


def safe_destination(url: str) -> bool:
    r"""Whether a link may point there: no scheme (a relative link), or a safe one.

    Browsers ignore spaces and control characters in a scheme (``java\tscript:``), so the
    scheme is read without them.
    """
    scheme = _SCHEME.match("".join(char for char in url if char > " " and char != "\x7f"))
    return scheme is None or scheme.group(1).lower() in SAFE_SCHEMES


@cache
def _parser() -> MarkdownIt:
    """CommonMark with tables, taking every link as a link so each can be judged here.

    markdown-it's own check would make ``[a](javascript:x)`` plain text, which another
    renderer may still link; the identity normaliser leaves mdurl out (see the document
    reader's parser on its thread safety). Inline content is parsed block by block, and
    the watched inline rules note where each of their constructs starts and ends.
    """
    with _BUILDING:
        md = MarkdownIt("commonmark", {"inline_definitions": True}).enable("table")
        md.disable("inline")
        md.validateLink = lambda url: True  # type: ignore[method-assign]
        md.normalizeLink = lambda url: url  # type: ignore[method-assign]
        md.normalizeLinkText = lambda link: link  # type: ignore[method-assign]
        for name in _WATCHED:
            md.inline.ruler.at(name, _watching(getattr(rules_inline, name), name))
        for ruler in (md.core.ruler, md.block.ruler, md.inline.ruler, md.inline.ruler2):
            ruler.getRules("")  # compiles every chain's cache at once
        return md


def _watching(rule: Callable[[StateInline, bool], bool], kind: str) -> Any:
    """The rule, noting in ``env["marks"]`` each construct it made and where it lies."""

    def watched(state: StateInline, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            marks = state.env.setdefault("marks", [])
            made = next(token for token in state.tokens[count:] if token.type in _MADE)
            marks.append((state.src, kind, start, state.pos, made))
        return True

    return watched


def _unsafe_edits(text: str) -> list[Edit]:
    """What to change in the text to take out each unsafe construct markdown-it finds."""
    md = _parser()
    env: dict[str, Any] = {}
    tokens = md.parse(text, env)
    starts, ends = line_bounds(text)
    edits: list[Edit] = []
    for token in tokens:
        if token.map is None:
            continue
        first, last = token.map
        if token.type == "definition" and not safe_destination(token.meta["url"]):
            end = starts[last] if last < len(starts) else len(text)
            edits.append((starts[first], end, ""))
        elif token.type == "html_block":
            at = text.find("<", starts[first], ends[first])
            if at < 0:
                raise UnplaceableMarkup(f"no tag opens the HTML block on line {first + 1}")
            edits.append((at, at, "\\"))
        elif token.type == "inline":
            env["marks"] = []
            md.inline.parse(token.content, md, env, [])
            lines = content_offsets(token.content, first, text, starts, ends)
            for start, end, replacement in _inline_edits(token.content, env["marks"], md):
                edits.append(_placed(text, token.content, lines.offset, start, end, replacement))
    return edits


def _inline_edits(content: str, marks: list[Any], md: MarkdownIt) -> list[Edit]:
    """Edits of one block's inline content (constructs read from an image's alt wait)."""
    edits: list[Edit] = []
    for source, kind, start, end, token in marks:
        if source is not content:
            continue  # parsed from a copy (an image's alt text): found again once it is out
        if kind == "html_inline":
            edits.append((start, start, "\\"))
            continue
        target = token.attrGet("src" if kind == "image" else "href")
        if safe_destination(str(target or "")):
            continue
        if kind == "autolink":
            edits += [(start, start + 1, ""), (end - 1, end, "")]
            continue
        opener = 2 if kind == "image" else 1
        label_end = _label_end(content, start + opener - 1, md)
        edits += [(start, start + opener, ""), (label_end, end, "")]
    return edits


def _label_end(content: str, bracket: int, md: MarkdownIt) -> int:
    """Where the ``]`` closing the label opened at ``bracket`` is, as the link rule finds it."""
    state = StateInline(content, md, {}, [])
    end: int = md.helpers.parseLinkLabel(state, bracket, False)
    if end < 0:
        raise UnplaceableMarkup(f"no label end for the link at {bracket} of {content[:80]!r}")
    return end


def _placed(
    text: str, content: str, offset: Callable[[int], int], start: int, end: int, new: str
) -> Edit:
    """An edit of a block's content as an edit of the text, checked against its bytes."""
    if start == end:
        at = offset(start)
        if text[at : at + 1] != content[start : start + 1]:
            raise UnplaceableMarkup(f"{content[start : start + 20]!r} is not at {at}")
        return at, at, new
    first, last = offset(start), offset(end - 1) + 1
    wanted = content[start:end]
    found = text[first:last]
    same = (
        found == wanted
        if "\n" not in wanted
        else found[:1] + found[-1:] == wanted[:1] + wanted[-1:]
    )
    if not same:
        raise UnplaceableMarkup(f"{wanted[:40]!r} is not at {first}-{last}")
    return first, last, new


def _apply(text: str, edits: list[Edit]) -> str:
    """The text with the edits made, last first; one overlapping another waits a round."""
    kept: list[Edit] = []
    for edit in sorted(edits, key=lambda item: (item[0], item[1]), reverse=True):
        if not kept or edit[1] <= kept[-1][0]:
            kept.append(edit)
    for start, end, new in kept:
        text = text[:start] + new + text[end:]
    return text
