"""What the CLI writes: text from users and stores, with its control characters made visible.

Newline and tab are kept where output has lines; see ``app.text.visible`` for why the rest
are written as their escapes.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from app.text.visible import visible

__all__ = ["TerminalConsole", "visible"]


class TerminalConsole(Console):
    """A rich Console that writes no control character of the text it is given.

    The text of every segment is passed through :func:`visible` just before it is written;
    rich's own styling (colour codes, made from a segment's style, not its text) and its
    control segments are untouched. One place for every ``print``, table and JSON dump.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Rich's rendering, with control characters in the text made visible."""
        for segment in super().render(renderable, options):
            if segment.control or not segment.text:
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style, segment.control)
