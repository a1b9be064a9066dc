"""The ``##`` sections of an article, so a check can say which section a sentence is in.

The Reviewer and the evaluation harness both judge a sentence by its section: the
apparatus sections (Open questions, Sources) are built from the contracts, not prose.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from graphs.markdown import apparatus_heading


@dataclass(frozen=True)
class Layout:
    """The article's ``##`` sections: where each starts, and its title."""

    body: str
    starts: list[int]
    titles: list[str]

    @classmethod
    def of(cls, body: str) -> Layout:
        """The sections of a markdown body (``##`` headings outside code fences)."""
        starts: list[int] = []
        titles: list[str] = []
        offset = 0
        fence: str | None = None
        for line in body.splitlines(keepends=True):
            marker = line.lstrip()[:3]
            if marker in ("```", "~~~"):
                fence = None if fence == marker else (fence or marker)
            elif fence is None and line.startswith("## "):
                starts.append(offset)
                titles.append(line[3:].strip())
            offset += len(line)
        return cls(body, starts, titles)

    def section_at(self, offset: int) -> str | None:
        """The title of the section holding this offset (None before the first)."""
        at = bisect.bisect_right(self.starts, offset) - 1
        return self.titles[at] if at >= 0 else None

    def in_apparatus(self, offset: int) -> bool:
        """Whether this offset lies in an Open questions or Sources section."""
        heading = self.section_at(offset)
        return heading is not None and apparatus_heading(f"## {heading}")

    def text_of(self, title: str) -> str:
        """The text of the first section with this title (case-insensitive), else ''."""
        for at, found in enumerate(self.titles):
            if found.casefold() == title.casefold():
                end = self.starts[at + 1] if at + 1 < len(self.starts) else len(self.body)
                return self.body[self.starts[at] : end]
        return ""
