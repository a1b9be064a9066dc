r"""What the CLI writes: text from users and stores, with its control characters made visible.

An objective, a thread's question or an artifact can hold escape sequences ("\x1b]0;…\x07"
retitles the window, "\x1b[2J" clears the screen). Printed raw, they act on the reader's
terminal. Every character a terminal acts on (C0 controls, DEL, the C1 controls some
terminals take as ESC) is written as its ``\xNN`` escape instead, so the text stays
readable and the terminal does nothing. Newline and tab are kept where output has lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_AND_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(text: str, *, lines: bool = True) -> str:
    r"""``text`` with each control character as ``\xNN``; ``lines`` keeps newline and tab."""
    pattern = _CONTROLS if lines else _CONTROLS_AND_BREAKS
    return pattern.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


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
