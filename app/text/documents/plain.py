"""Plain text read as a document: the layout conventions of text manuals, read as structure.

A plain-text manual (vim's help files, GNU texts made by ``makeinfo --plaintext``,
RFC-style documents, a README.txt) has no markup language, but it has a layout its
readers know: rules and underlines, numbered or all-caps headings, tables of contents,
help tags and links, columns aligned with runs of spaces or tabs, and examples set apart
by indentation, a ``>`` ... ``<`` pair (vim) or a shell prompt. Quoting any of those as
a sentence quotes decoration, so only prose paragraphs and list items become sentences,
and a heading names the section of the prose under it.

The text is cut at blank lines into chunks of lines; each chunk is read by its shape, in
this order, first match wins:

- rules (a line of one repeated mark: ``=====``, ``-----``, ``* * *``) are read as
  nothing; one directly under a single line (with an optional overline) underlines a
  heading;
- lines that define help tags (``*08.1*``, ``*:split*`` at a line's start or after a
  gap) head the chunk: a heading named by their text (after a rule: a top-level one),
  or nothing to read when that text is itself prose (vim's first line);
- a numbered (``1.2.``, ``A.1``), all-caps or short title-like line alone, or over lines
  indented deeper than it, is a heading, and so is vim's header line ending in `` ~``;
  short term lines over a deeper description (GNU's ``'-i'`` / ``'--ignore-case'``,
  texinfo's ``-- Function:``, an RFC's glossary) head it the same way, and so does a term
  before a tab-aligned description (``CTRL-W j<Tab>Move cursor to ...``);
- a table of contents (``|08.1|`` links, dot leaders, numbered titles, an info menu) is
  a table;
- an example is code: a shell or Python prompt, a block indented deeper than the
  sentence ending with a colon that introduces it (blank lines inside it included),
  a deeper block of comments, or with no sentence end and the marks of code (and the
  blocks after either at its depth), lines all ending in `` ~``, a box drawing, and at
  any depth lines with no sentence end whose marks and symbols are code's;
- columns aligned at the same display column after a gap of a tab or two or more
  spaces are a table; two spaces after a sentence's stop are not a gap (texts set
  sentences apart so);
- lines opening with a bullet or a number are list items (also right under the
  sentence that leads into them), anything else a paragraph;
  a paragraph of links, or with no words, is none.

vim's examples are read first, across blank lines: a line ending in `` >`` (or
``>vim``) opens one, and it runs to the first line starting in column 0, whose ``<`` is
hidden. In prose, a ``|link|`` shows its name and hides its bars, and tags at a line's
start or end (after a gap or a stop) are hidden: the sentence's span stays the source's
bytes (so ``handoff show --source`` and the tamper check work as for Markdown), what a
reader sees is its ``plain``.

Heading levels: numbered headings by their depth, underlined ones by the order their
underline styles first appear (as reStructuredText does), tag headings after a rule at
the top; others one below the last of those.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.text.documents.blocks import Part, transcript_type
from app.text.documents.document import PLAIN, BlockKind
from app.text.documents.inline import Reading, ReadingBuilder
from app.text.documents.lines import ContentLines
from app.text.primitives import normalize_space

_TAB = 8
_RULE = re.compile(r"[ \t]*([-=_~*#+.^:`'\"<>/\\])(?:[ \t]?\1){2,}[ \t]*")
_TAG = r"\*[^*\s|]+\*"
_TRAILING_TAGS = re.compile(
    rf"(?:\t|[ \t]{{2}}|(?<=[.:;!?)\"'] ))[ \t]*{_TAG}(?:[ \t]+{_TAG})*[ \t]*$"
)
_LEADING_TAGS = re.compile(rf"^[ \t]*{_TAG}(?:[ \t]+{_TAG})*(?:[ \t]+|$)")
_LINK = re.compile(r"(?<![|\w])\|([^|\s]+)\|(?![|\w])")
_VIM_HEADER = re.compile(r"(?:^|[ \t])~[ \t]*$")
_VIM_EXAMPLE = re.compile(r"(?:^|[ \t])>[a-z]*$")
_NUMBERED = re.compile(
    r"(?P<number>(?:\d{1,3}|[A-Z])(?:\.\d{1,3})*\.?|(?:Appendix|Chapter|Section)\s+[A-Z\d]+\.?)"
    r"[ \t]+(?P<title>\S.*)"
)
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+•o]|\d{1,3}[.)]|[a-z][.)]|\(\w{1,3}\))[ \t]+(?=\S)")
_TOC_LINE = re.compile(
    r"[ \t]*(?:\|[^|\s]+\|[ \t]+\S.*"  # |08.1|  Split a window
    r"|.*\S[ \t]*(?:\.[ \t]?){4,}[ \t]*\w{1,5}"  # Introduction ........ 4
    r"|.*\S(?:\t|[ \t]{2,})\d{1,4}"  # Introduction      4
    r"|\*[ \t]+[^:]+::.*|\*[ \t]+[^:]+:[ \t]+[^.]+\..*)[ \t]*"  # * Node::  an info menu entry
)
_TEXINFO_DEFINITION = re.compile(r"[ \t]*-- [A-Z][\w ]*: \S")
"""texinfo's ``-- Function: int f (int x)``, ``-- Variable: NAME``: a term, however long."""
_BOX = re.compile(r"[ \t]*[+|][-=+|. \t]*[-=][-=+|. \t]*[+|][ \t]*|.*(?:\+-{2,}|-{2,}\+).*")
_STOP_AFTER_WORD = re.compile(r"\w{2}[\"'’”()\]|}>`]*[.!?][\"'’”)\]]*(?:\s|$)")
_DEFINITION = re.compile(
    r"[ \t]*(?P<term>\S(?:.*?\S)?)(?P<gap>\t[ \t]*|[ \t]{2,})(?P<text>[A-Z][a-z]|[A-Z] )"
)
_COMMENTS = ("#", "//", "/*", ";;", "--", '" ')
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?:\s|$)")
_CODE_MARKS = re.compile(r"^[ \t]*[:$%#/\\.<{\[(-]|[=;{}<>\\]|\w\(|/\w|\[[^\]\s]+\]")
_WORD = re.compile(r"[^\W\d_][^\W\d_'’-]*")


@dataclass(frozen=True, slots=True)
class _Line:
    """One source line: where it starts and ends, and how deep it is indented."""

    number: int
    start: int
    end: int
    text: str
    indent: int

    @property
    def body(self) -> str:
        return self.text.strip()


def _line(text: str, number: int, start: int, end: int) -> _Line:
    line = text[start:end]
    return _Line(number, start, end, line, _width(line[: len(line) - len(line.lstrip())]))


def _width(lead: str) -> int:
    """Display width of leading whitespace, a tab to the next multiple of eight."""
    column = 0
    for char in lead:
        column = column + _TAB - column % _TAB if char == "\t" else column + 1
    return column


def _columns(line: str, after: int = 0) -> set[int]:
    """Display columns where text starts after a gap: a tab, or two or more spaces.

    Two or three spaces after a sentence's stop are how texts set sentences apart, not a
    column; leading indentation is no gap either, nor one before ``after`` (the gap after
    a list item's marker).
    """
    found: set[int] = set()
    column = 0
    gap = ""
    previous = ""
    seen = False
    for index, char in enumerate(line):
        if char in " \t":
            gap += char
            column = column + _TAB - column % _TAB if char == "\t" else column + 1
            continue
        if seen and gap and ("\t" in gap or len(gap) >= 2) and index > after:
            if not ("\t" not in gap and len(gap) <= 3 and previous in ".!?:;"):
                found.add(column)
        gap = ""
        seen = True
        previous = char
        column += 1
    return found


def _tagless(body: str) -> str:
    """A line's text with its help tags and link bars taken out."""
    body = _TRAILING_TAGS.sub("", body)
    body = _LEADING_TAGS.sub("", body)
    return normalize_space(_LINK.sub(r"\1", body))


def _title_like(body: str, words: int = 10) -> bool:
    """A short line that names something rather than says it: no stop, no clause break."""
    if not body or len(body) > 80 or len(body.split()) > words:
        return False
    if body[-1] in ".,;:" or ".  " in body or "|" in body or _columns(body):
        return False
    first = next((char for char in body if char.isalnum()), "")
    return bool(first) and (first.isupper() or first.isdigit()) and body[0] not in "$>(-*"


def _all_caps(body: str) -> bool:
    letters = [char for char in body if char.isalpha()]
    return len(letters) >= 3 and all(char.isupper() for char in letters)


def _numbered(body: str) -> tuple[int, str] | None:
    """The depth and title of a numbered heading (``1.2.  Purpose``), if it is one."""
    match = _NUMBERED.fullmatch(body)
    if match is None or not _title_like(match.group("title")):
        return None
    number = match.group("number")
    if number[0].isupper() and number[0].isalpha() and len(number) == 1:
        return None  # "A Title" is a sentence's start, not section A
    return number.rstrip(".").count(".") + 1, normalize_space(match.group("title"))


def _heading_shape(body: str) -> tuple[str, int, str] | None:
    """("numbered", depth, name) or ("bare", 0, name) for a line read as a heading."""
    numbered = _numbered(body)
    if numbered is not None:
        return "numbered", numbered[0], numbered[1]
    if _all_caps(body) and _title_like(body, 12) or _title_like(body, 8):
        return "bare", 0, normalize_space(body)
    return None


def _is_rule(line: _Line) -> bool:
    return len(line.body) >= 3 and _RULE.fullmatch(line.text) is not None


def _indent(lines: Sequence[_Line]) -> int:
    return min(line.indent for line in lines if line.body)


def plain_parts(text: str, starts: list[int], ends: list[int]) -> tuple[str | None, list[Part]]:
    """The title (the first heading's name) and the blocks, each with its section path."""
    reader = _Reader(text)
    lines = [_line(text, number, starts[number], ends[number]) for number in range(len(starts))]
    chunk: list[_Line] = []
    number = 0
    while number < len(lines):
        line = lines[number]
        if not line.body:
            reader.chunk(chunk)
            chunk = []
            number += 1
            continue
        opener = _VIM_EXAMPLE.search(line.text)
        if opener is not None and _example_follows(lines, number + 1):
            cut = line.text[: opener.start()].rstrip()
            if cut.strip():
                chunk.append(
                    _Line(line.number, line.start, line.start + len(cut), cut, line.indent)
                )
            reader.chunk(chunk)
            chunk = []
            number = reader.vim_example(lines, number + 1)
            continue
        chunk.append(line)
        number += 1
    reader.chunk(chunk)
    return reader.title, reader.parts


def _example_follows(lines: list[_Line], number: int) -> bool:
    """Whether the next line with text is indented, as a vim example's lines are."""
    while number < len(lines) and not lines[number].body:
        number += 1
    return number < len(lines) and lines[number].text[:1] in " \t"


class _Reader:
    """Reads chunks in order, keeping the section path and what the last prose introduced."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts: list[Part] = []
        self.title: str | None = None
        self.headings: list[tuple[int, str]] = []
        self.underlines: list[tuple[str, bool]] = []
        self.structural = 0
        """The level of the last numbered, underlined or tag heading."""
        self.plain_level = 0
        """The level of the last heading that was not a term."""
        self.after_rule = False
        self.intro: int | None = None
        """The indent of the last prose when it ended with a colon: what it introduces."""
        self.code_indent: int | None = None
        """The indent of the example being read, which blank lines do not end."""
        self.prose_indent = 0

    @property
    def section(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.headings)

    # -- vim examples -------------------------------------------------------------------

    def vim_example(self, lines: list[_Line], number: int) -> int:
        """The example from ``number`` to a line starting in column 0; the line after it."""
        first = number
        while number < len(lines) and (not lines[number].body or lines[number].text[:1] in " \t"):
            number += 1
        body = [line for line in lines[first:number] if line.body]
        if body:
            self.code(body)
        if number < len(lines) and lines[number].text.startswith("<"):
            line = lines[number]
            rest = line.text[1:]
            lines[number] = _Line(line.number, line.start + 1, line.end, rest, _width(rest))
        return number

    # -- chunks -------------------------------------------------------------------------

    def chunk(self, lines: list[_Line]) -> None:
        """A run of lines between blank lines: rules and underlined headings first."""
        run: list[_Line] = []
        for index, line in enumerate(lines):
            if not _is_rule(line):
                run.append(line)
                continue
            if len(run) == 1 and _underlines(line, run[0]):
                overline = index >= 2 and _is_rule(lines[index - 2])
                self.underlined(run[0], line, lines[index - 2] if overline else None)
            else:
                self.run(run)
                self.after_rule = True
            run = []
        self.run(run)

    def run(self, lines: list[_Line]) -> None:
        """Lines with no rule among them, read by their shape (see the module's docstring)."""
        if not lines:
            return
        lines = self.tag_head(lines)
        if not lines:
            return
        if self.code_indent is not None:
            if _indent(lines) >= self.code_indent:
                self.code(lines)
                return
            self.code_indent = self.intro = None  # the example is over, and what it ended
        if all(line.body[:1] in "+|" for line in lines) and any(
            _BOX.fullmatch(line.text) for line in lines
        ):
            self.leaf("table", lines)  # a table drawn with borders
            return
        if self.intro is not None and _indent(lines) >= self.intro + 2:
            if _LIST_ITEM.match(lines[0].text) is None and not _reads_as_prose(lines):
                self.code_indent = _indent(lines)
                self.code(lines)
                return
        self.intro = None
        lines = self.heading_head(lines)
        if not lines:
            return
        if _toc(lines):
            self.leaf("table", lines)
        elif any(_BOX.fullmatch(line.text) for line in lines):
            boxed = all(line.body[:1] in "+|" for line in lines)
            self.leaf("table", lines) if boxed else self.code(lines)
        else:
            self.body(lines)

    def body(self, lines: list[_Line]) -> None:
        """Examples, tables, lists and paragraphs within a run of lines."""
        if not lines:
            return
        prompt = next((i for i, line in enumerate(lines) if transcript_type([line.text])), None)
        if prompt is not None:
            self.body(lines[:prompt])
            self.code(lines[prompt:])
            return
        split = _colon_split(lines)
        if split is not None:
            self.body(lines[:split])
            self.code(lines[split:])
            self.code_indent = _indent(lines[split:])
            return
        if self.deeper_code(lines):
            self.code(lines)
            self.code_indent = _indent(lines)  # the example may go on past a blank line
            return
        definitions = _definitions(lines)
        if definitions is not None:
            for first, last, term_end, text_start in definitions:
                term = self.text[lines[first].start : term_end].strip()
                self.heading(_tagless(term), self.plain_level + 1, [lines[first]], True, term_end)
                self.prose("paragraph", lines[first:last], text_start)
            return
        table = _table(lines)
        if table is not None:
            first, last = table
            self.body(lines[:first])
            self.leaf("table", lines[first:last])
            self.body(lines[last:])
            return
        if _LIST_ITEM.match(lines[0].text) is not None:
            self.items(lines)
            return
        listed = next(
            (
                index
                for index in range(1, len(lines))
                if _LIST_ITEM.match(lines[index].text) and lines[index - 1].body[-1] in ":.?!"
            ),
            None,
        )
        if listed is not None:  # a sentence, then the list it leads into
            self.body(lines[:listed])
            self.items(lines[listed:])
            return
        if _code_shaped(lines):
            self.code(lines)
            return
        self.prose(
            "paragraph", lines, lines[0].start + len(lines[0].text) - len(lines[0].text.lstrip())
        )

    def deeper_code(self, lines: list[_Line]) -> bool:
        """A block indented deeper than the prose around it, with no sentence and code's marks."""
        if _indent(lines) < self.prose_indent + 2:
            return False
        if all(line.body.startswith(_COMMENTS) for line in lines):
            return True  # comments of an example: "# Print all available fields."
        joined = " ".join(line.body for line in lines)
        if _STOP_AFTER_WORD.search(joined):
            return False
        letters = sum(char.isalpha() for char in joined)
        symbols = sum(not char.isalnum() and not char.isspace() for char in joined)
        return any(_CODE_MARKS.search(line.text) for line in lines) or symbols > letters

    # -- headings -----------------------------------------------------------------------

    def underlined(self, title: _Line, underline: _Line, overline: _Line | None) -> None:
        style = (underline.body[0], overline is not None)
        if style not in self.underlines:
            self.underlines.append(style)
        level = self.underlines.index(style) + 1
        first = overline or title
        numbered = _numbered(_tagless(title.body))
        name = numbered[1] if numbered else _tagless(title.body) or title.body
        self.heading(name, level, [first, underline])
        self.structural = level

    def tag_head(self, lines: list[_Line]) -> list[_Line]:
        """Leading lines that define help tags: a heading named by their text, or nothing.

        The names a tag line defines may stand on lines of their own above it (vim's
        ``:q[uit]!`` over ``CTRL-W q  *CTRL-W_q*``); a tag line whose text is a sentence
        is prose, its tags hidden.
        """
        first = lines[0]
        head = last_tagged = 0
        while head < len(lines):
            line = lines[head]
            if _tagged(line.text):
                last_tagged = head + 1
            elif not (line.indent <= first.indent and _term(line.body)):
                break
            head += 1
        if not last_tagged:
            return lines
        named = [line for line in lines[:head] if _tagless(line.body)] or [first]
        if head < len(lines) and _indent(lines[head:]) < _indent(named) + 2:
            head = last_tagged
        raw = [_LEADING_TAGS.sub("", _TRAILING_TAGS.sub("", line.body)) for line in lines[:head]]
        said = [index for index, name in enumerate(raw) if name.strip() and not _named(name)]
        if said:  # prose, or vim's first line ("For Vim version 9.1.  Last change: ...")
            header = lines[said[0]].number == 0 and _LEADING_TAGS.match(lines[said[0]].text)
            cut = said[0] + (1 if header else 0)
            if cut:
                self.leaf("media", lines[:cut])
            return lines[cut:]
        names = [_tagless(name) for name in raw if name.strip()]
        if names:
            level = 1 if self.after_rule or not self.structural else self.structural + 1
            if self.after_rule:
                self.structural = 1
            self.heading(", ".join(names), level, lines[:head])
        else:
            self.leaf("media", lines[:head])
        return lines[head:]

    def heading_head(self, lines: list[_Line]) -> list[_Line]:
        """A heading line alone or over deeper lines, or term lines over a description."""
        first = lines[0]
        if _VIM_HEADER.search(first.text):  # vim's "Header line ~"; lines all so: a display
            if all(_VIM_HEADER.search(line.text) for line in lines):
                self.code(lines)
                return []
            name = normalize_space(_tagless(first.body)[:-1])
            if name:
                self.heading(name, self.structural + 1, [first])
            return lines[1:]
        shape = None if _columns(first.text) else _heading_shape(_tagless(first.body))
        alone = len(lines) == 1
        deeper = not alone and _indent(lines[1:]) >= first.indent + 2
        if shape is not None and (
            alone or deeper and (shape[0] == "numbered" or _all_caps(first.body))
        ):
            kind, depth, name = shape
            if kind == "numbered":
                self.heading(name, depth, [first])
                self.structural = depth
            else:
                self.heading(name, self.structural + 1, [first])
            return lines[1:]
        if alone:
            return lines
        head = 1
        while head < len(lines) and lines[head].indent <= first.indent:
            head += 1
        if head == len(lines) or _indent(lines[head:]) < first.indent + 2:
            return lines
        terms = lines[:head]
        if all(
            (_term(line.body) and not _columns(line.text)) or _TEXINFO_DEFINITION.match(line.text)
            for line in terms
        ):
            self.heading(
                ", ".join(_tagless(line.body) for line in terms),
                self.plain_level + 1,
                terms,
                term=True,
            )
            return lines[head:]
        return lines

    def heading(
        self, name: str, level: int, lines: list[_Line], term: bool = False, end: int = -1
    ) -> None:
        """A heading named ``name`` at ``level`` over ``lines`` (up to ``end``, if given)."""
        level = max(level, 1)
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, name))
        if not term:
            self.plain_level = level
        if self.title is None:
            self.title = name
        self.leaf("heading", lines, None, end)
        self.after_rule = False

    # -- leaves -------------------------------------------------------------------------

    def span(self, lines: Sequence[_Line]) -> tuple[int, int]:
        start = lines[0].start + len(lines[0].text) - len(lines[0].text.lstrip())
        end = lines[-1].start + len(lines[-1].text.rstrip())
        return start, max(start, end)

    def leaf(
        self, kind: BlockKind, lines: Sequence[_Line], media: str | None = PLAIN, end: int = -1
    ) -> None:
        """A block that is no prose, from its first character to its last (or ``end``)."""
        start, last = self.span(lines)
        end = last if end < 0 else end
        if start < end:
            self.parts.append(
                Part(kind, start, end, self.section, None if kind == "heading" else media)
            )
        self.after_rule = False
        if kind != "code":
            self.intro = None

    def code(self, lines: Sequence[_Line]) -> None:
        media = transcript_type([line.text for line in lines]) or PLAIN
        self.leaf("code", lines, media)

    def items(self, lines: list[_Line]) -> None:
        """List items: each from its marker's text to the line before the next marker."""
        indent = lines[0].indent
        starts = [
            index
            for index, line in enumerate(lines)
            if line.indent <= indent + 1 and _LIST_ITEM.match(line.text) is not None
        ]
        for first, last in zip(starts, [*starts[1:], len(lines)], strict=True):
            item = lines[first:last]
            marker = _LIST_ITEM.match(item[0].text)
            assert marker is not None
            self.prose("list_item", item, item[0].start + marker.end())

    def prose(self, kind: BlockKind, lines: list[_Line], start: int) -> None:
        """Prose from ``start``: links show their names, tags set after a gap are hidden."""
        end = self.span(lines)[1]
        if start >= end:
            return
        content = self.text[start:end]
        reading = _reading(content)
        shown = reading.plain
        words = _WORD.findall(_LINK.sub(" ", content))
        linked = _LINK.search(content) is not None
        tokens = [token for token in shown.split() if any(c.isalpha() for c in token)]
        if (
            len(words) < (4 if linked else 3)
            or len(tokens) < 2
            or shown.upper() == shown
            or shown.rstrip().endswith("::")  # an info menu entry, a literal block's intro
        ):
            label: BlockKind = "code" if _CODE_MARKS.search(content.rstrip(":")) else "heading"
            self.parts.append(Part("media" if linked else label, start, end, self.section, PLAIN))
            self.intro = self.prose_indent if shown.rstrip().endswith(":") else None
            return
        mapping = ContentLines([0], [start], [end])
        self.parts.append(Part(kind, start, end, self.section, None, reading, mapping))
        self.after_rule = False
        self.prose_indent = max(line.indent for line in lines)
        self.intro = self.prose_indent if shown.rstrip().endswith(":") else None


def _underlines(rule: _Line, title: _Line) -> bool:
    """Whether a rule right under a single short line underlines it as a heading."""
    body = title.body
    return bool(body) and len(body) <= 100 and not _is_rule(title) and body[-1] not in ".,;"


def _term(body: str) -> bool:
    """A term a description is indented under: short, and not a sentence."""
    return len(body.split()) <= 12 and _named(body)


def _named(body: str) -> bool:
    """Whether a line names something (a command, a term, a title) rather than says it."""
    body = body.strip()
    return (
        len(body) <= 80
        and ".  " not in body
        and not body.endswith(":")
        and _STOP_AFTER_WORD.search(body) is None
    )


def _tagged(line: str) -> bool:
    """Whether a line defines help tags: at its start, or after a gap at its end."""
    return bool(_TRAILING_TAGS.search(line) or _LEADING_TAGS.match(line))


def _toc(lines: list[_Line]) -> bool:
    """A table of contents: link or leader lines, or numbered titles, with nothing else."""
    if len(lines) == 1:
        return bool(re.search(r"(?:\.[ \t]?){4,}[ \t]*\w{1,5}[ \t]*$", lines[0].text))
    entries = others = 0
    entry_indent = -1
    for line in lines:
        if _TOC_LINE.fullmatch(line.text) or _numbered(_tagless(line.body)):
            entries += 1
            entry_indent = line.indent
        elif 0 <= entry_indent < line.indent:
            continue  # an entry's description, wrapped
        elif _SENTENCE_END.search(line.body):
            return False
        else:
            others += 1
    return entries >= 2 and entries >= 2 * others


def _colon_split(lines: list[_Line]) -> int | None:
    """Where the lines indented under a line ending with a colon start, if they are code."""
    for index, line in enumerate(lines[:-1]):
        if line.body.endswith(":") or _VIM_EXAMPLE.search(line.text):
            rest = lines[index + 1 :]
            base = _indent(lines[: index + 1])
            if _indent(rest) >= base + 2 and _LIST_ITEM.match(rest[0].text) is None:
                return None if _reads_as_prose(rest) else index + 1
            return None
    return None


def _code_shaped(lines: list[_Line]) -> bool:
    """No sentence anywhere, and the marks of code on most lines: an example, set flush."""
    joined = " ".join(line.body for line in lines)
    if _STOP_AFTER_WORD.search(joined) or joined.endswith(":"):
        return False
    marked = sum(1 for line in lines if _CODE_MARKS.search(line.text))
    symbols = sum(not char.isalnum() and not char.isspace() for char in joined)
    visible = sum(not char.isspace() for char in joined)
    return 2 * marked > len(lines) and 100 * symbols >= 15 * visible


def _reads_as_prose(lines: list[_Line]) -> bool:
    """Sentences, though indented under a colon: each line one, or wrapped prose."""
    bodies = [line.body for line in lines]
    ends = sum(1 for body in bodies if _STOP_AFTER_WORD.search(body[-6:] + " "))
    if ends == len(bodies):
        return True
    long = sum(1 for body in bodies if len(body.split()) >= 6)
    return (
        bool(ends)
        and _STOP_AFTER_WORD.search(bodies[-1] + " ") is not None
        and 2 * long >= len(bodies)
    )


def _definitions(lines: list[_Line]) -> list[tuple[int, int, int, int]] | None:
    """Terms each followed by a gap and a described sentence, the lines under them deeper.

    Returns each item's first and past-last line, where its term ends and where its
    description starts. Rows that each hold one line are a table, not definitions: only a
    single item, or items whose descriptions wrap, are read so.
    """
    if _LIST_ITEM.match(lines[0].text) is not None:
        return None
    base = lines[0].indent
    starts = [
        index
        for index, line in enumerate(lines)
        if line.indent <= base and _DEFINITION.match(line.text) is not None
    ]
    if not starts or starts[0] != 0:
        return None
    if any(line.indent <= base for index, line in enumerate(lines) if index not in starts):
        return None
    if 1 < len(starts) == len(lines):
        return None
    items: list[tuple[int, int, int, int]] = []
    for first, last in zip(starts, [*starts[1:], len(lines)], strict=True):
        found = _definition(lines[first:last])
        if found is None:
            return None
        items.append((first, last, *found))
    return items


def _definition(lines: list[_Line]) -> tuple[int, int] | None:
    """A term, a gap, and its description, wrapped to the description's column.

    vim writes ``CTRL-W j<Tab>Move cursor to Nth window below current one.`` with the
    next lines indented to the description: the term heads the prose, and is no part of
    it. Returns where the term ends and where the description starts.
    """
    first = lines[0]
    match = _DEFINITION.match(first.text)
    if match is None:
        return None
    term, described = match.group("term"), first.text[match.start("text") :]
    if len(term.split()) > 5 or not _named(term.rstrip(":")):
        return None
    if match.group("gap").isspace() and "\t" not in match.group("gap") and term[-1] in ".!?;":
        return None
    column = _width(first.text[: match.start("text")])
    if any(line.indent < column - 2 for line in lines[1:]):
        return None
    joined = " ".join([described, *(line.body for line in lines[1:])])
    if len(joined.split()) < 4 or _STOP_AFTER_WORD.search(joined) is None:
        return None
    if len(lines) == 1 and not joined.rstrip().endswith((".", "!", "?")):
        return None
    return first.start + match.end("term"), first.start + match.start("text")


def _table(lines: list[_Line]) -> tuple[int, int] | None:
    """The first and past-last line of columns aligned in ``lines``, if any."""
    columns = [_columns(line.text, _marker_end(line.text)) for line in lines]
    if len(lines) == 1:
        return (0, 1) if columns[0] else None
    counts: dict[int, int] = {}
    for found in columns:
        for column in found:
            counts[column] = counts.get(column, 0) + 1
    shared = [column for column, count in counts.items() if count >= 2]
    if not shared:
        return (0, len(lines)) if all(columns) else None
    best = max(shared, key=lambda column: (counts[column], -column))
    rows = [
        index
        for index, (line, found) in enumerate(zip(lines, columns, strict=True))
        if found or index and line.indent >= best - 1 and line.indent > lines[0].indent
    ]
    first = min(index for index, found in enumerate(columns) if best in found)
    last = first
    while last + 1 < len(lines) and last + 1 in rows:
        last += 1
    return first, last + 1


def _marker_end(line: str) -> int:
    """Where a list item's text starts after its marker (0 on a line that is no item)."""
    marker = _LIST_ITEM.match(line)
    return marker.end() if marker is not None else 0


def _reading(content: str) -> Reading:
    """What a reader sees of a prose block: links' names, no tags, line breaks as spaces."""
    out = ReadingBuilder(content)
    hidden: list[tuple[int, int]] = []
    for match in _LINK.finditer(content):
        hidden += [(match.start(), match.start() + 1), (match.end() - 1, match.end())]
    position = 0
    for line in content.split("\n"):
        tags = _TRAILING_TAGS.search(line)
        if tags is not None:
            lead = len(tags.group()) - len(tags.group().lstrip())
            hidden.append((position + tags.start() + lead, position + len(line.rstrip())))
        leading = _LEADING_TAGS.match(line)
        if leading is not None and (tags is None or leading.end() <= tags.start()):
            lead = len(line) - len(line.lstrip())
            hidden.append((position + lead, position + len(leading.group().rstrip())))
        position += len(line) + 1
    hidden.sort()
    cursor = 0
    for start, end in hidden:
        if start < cursor:
            continue
        _show(out, content, cursor, start)
        out.hide(start, end)
        cursor = end
    _show(out, content, cursor, len(content))
    return out.reading()


def _show(out: ReadingBuilder, content: str, start: int, end: int) -> None:
    if start < end:
        piece = content[start:end].translate(_SPACES)
        out.show(piece, start, end, True)


_SPACES = str.maketrans("\r\n\t\x0b\x0c", "     ")
