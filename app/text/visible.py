r"""Text from users and stores as a terminal may show it: control characters made visible.

An objective, a thread's question, an artifact or an error quoting them can hold escape
sequences ("\x1b]0;…\x07" retitles the window, "\x1b[2J" clears the screen). Written raw,
they act on the reader's terminal. Every character a terminal acts on (C0 controls, DEL,
the C1 controls some terminals take as ESC) is written as its ``\xNN`` escape instead, so
the text stays readable and the terminal does nothing. The CLI's consoles and a worker's
log lines both write through it.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_AND_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(text: str, *, lines: bool = True) -> str:
    r"""``text`` with each control character as ``\xNN``; ``lines`` keeps newline and tab."""
    pattern = _CONTROLS if lines else _CONTROLS_AND_BREAKS
    return pattern.sub(lambda match: f"\\x{ord(match.group()):02x}", text)
