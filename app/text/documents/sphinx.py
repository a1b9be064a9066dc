"""The directives Sphinx manuals are written in, which docutils alone does not know.

Registered with docutils (``register``) by what a reader gets from each: code
(``code-block``, ``testcode``...), prose (``versionadded``, ``seealso``, ``glossary``...),
an API object (its signature is code, its body prose), or nothing (``toctree``,
``autofunction``...). Every option is taken as text: Sphinx's options are not checked
here. A directive neither docutils nor this table knows stays a docutils error message,
which the reader never reads.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.parsers.rst.states import Body

_FIELD_MARKER = re.compile(Body.patterns["field_marker"])


class _AnyOption(dict[str, Any]):
    """An option spec taking every option as text: Sphinx's options are not ours to check."""

    def __missing__(self, key: str) -> Any:
        return directives.unchanged

    def __bool__(self) -> bool:
        return True


class _SphinxDirective(Directive):  # type: ignore[misc]  # docutils has no type hints
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOption()

    def argument_lines(self, skip: int | None) -> tuple[int, list[str]]:
        """The 1-based line of the argument text, and its lines, ``skip`` words cut.

        ``None`` cuts every word. Read from the directive's own text, so each line is the
        tail of its source line (``self.arguments`` has the lines joined).
        """
        lines = self.block_text.split("\n")
        head = lines[0]
        argument = [head[head.find("::") + 2 :].strip()]
        for line in lines[1:]:
            if not line.strip() or _FIELD_MARKER.match(line.strip()):
                break
            argument.append(line.strip())
        line = self.lineno
        if skip is None:
            return line, []
        while argument and not argument[0]:
            argument.pop(0)
            line += 1
        for _ in range(skip):
            if argument:
                argument[0] = (argument[0].split(maxsplit=1)[1:] or [""])[0]
            while argument and not argument[0]:
                argument.pop(0)
                line += 1
        return line, argument


class _Code(_SphinxDirective):
    """``code-block`` and kin: the content is code in the named (or implied) language."""

    language = ""

    def run(self) -> list[nodes.Node]:
        if not self.content:
            return []
        text = "\n".join(self.content)
        node = nodes.literal_block(text, text)
        node.line = self.content_offset + 1
        words = self.arguments[0].split() if self.arguments else []
        node["language"] = words[0].lower() if words else self.language
        return [node]


class _Prose(_SphinxDirective):
    """``versionadded`` and kin: text after the first ``skip`` words, then the body."""

    skip: int | None = 0

    def run(self) -> list[nodes.Node]:
        box = nodes.container()
        line, argument = self.argument_lines(self.skip)
        if argument:
            text = "\n".join(argument)
            inline, _ = self.state.inline_text(text, line)
            paragraph = nodes.paragraph(text, "", *inline)
            paragraph.line = line
            box += paragraph
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class _Signature(_SphinxDirective):
    """An API object (``function``, ``option``...): its signature is code, its body prose."""

    def run(self) -> list[nodes.Node]:
        box = nodes.container()
        line, argument = self.argument_lines(0)
        if argument:
            text = "\n".join(argument)
            signature = nodes.literal_block(text, text)
            signature.line = line
            python = self.name.startswith("py:") or self.name in _PYTHON_OBJECTS
            signature["language"] = "python" if python else ""
            box += signature
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class _Nothing(_SphinxDirective):
    """A table of contents, an index entry, autodoc, an included file: nothing to read."""

    def run(self) -> list[nodes.Node]:
        return []


def _code(default: str) -> type[_Code]:
    class Code(_Code):
        language = default

    return Code


def _prose(words: int | None) -> type[_Prose]:
    class Prose(_Prose):
        skip = words

    return Prose


_PYTHON_OBJECTS = (
    "function class method attribute property data exception decorator classmethod staticmethod"
).split()
SPHINX: dict[str, type[Directive]] = {
    **dict.fromkeys("code code-block sourcecode testoutput".split(), _code("")),
    **dict.fromkeys("testcode testsetup testcleanup jupyter-execute".split(), _code("python")),
    **dict.fromkeys("doctest ipython".split(), _code("pycon")),
    **dict.fromkeys(["prompt"], _code("console")),
    **dict.fromkeys("productionlist graphviz digraph graph mermaid".split(), _code("")),
    **dict.fromkeys("versionadded versionchanged versionremoved deprecated".split(), _prose(1)),
    **dict.fromkeys(["seealso"], _prose(0)),
    **dict.fromkeys(
        """glossary hlist only ifconfig rst-class tab tabs tab-set tab-item dropdown card grid
        grid-item grid-item-card""".split(),
        _prose(None),
    ),
    **dict.fromkeys(
        [
            *_PYTHON_OBJECTS,
            *(f"py:{name}" for name in _PYTHON_OBJECTS),
            *"""describe object option cmdoption envvar confval rst:directive
            rst:directive:option rst:role std:option std:envvar""".split(),
        ],
        _Signature,
    ),
    **dict.fromkeys(
        """toctree index autosummary automodule autoclass autofunction automethod
        autoattribute autodata autoexception autodecorator autoproperty literalinclude
        highlight currentmodule py:currentmodule module py:module program sectionauthor
        moduleauthor codeauthor tabularcolumns todo todolist""".split(),
        _Nothing,
    ),
}
"""Sphinx's directives by what a reader gets from them; docutils knows none of them."""


@cache
def register() -> None:
    """Register the table once (docutils keeps directives in its globals)."""
    for name, directive in SPHINX.items():
        directives.register_directive(name, directive)
