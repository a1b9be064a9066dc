"""What a renderer or a terminal would act on in a text: for tests of what is published."""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

CONTROLS = [chr(code) for code in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]
"""What a terminal acts on: C0 but tab and newline, DEL and C1."""


def destinations(markdown: str) -> list[str]:
    """Every link and image target a CommonMark renderer that checks no scheme would use."""
    md = MarkdownIt("commonmark").enable("table")
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    found: list[str] = []

    def walk(tokens: list[Any]) -> None:
        for token in tokens:
            for name in ("href", "src"):
                if token.attrGet(name) is not None:
                    found.append(str(token.attrGet(name)))
            walk(token.children or [])

    walk(md.parse(markdown))
    return found
