"""One line per record on stderr, with its control characters made visible.

A record can quote a thread's text (an objective, an error naming it), so every line a
long-running process prints (a fleet worker's job lines, the A2A server's task lines) is
written as the CLI writes: nothing in it can act on the terminal.
"""

from __future__ import annotations

import logging
import sys
from typing import IO

from app.text.visible import visible


class VisibleLines(logging.Formatter):
    """A record's lines, its traceback's too, with no control character a terminal acts on."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as the base formatter lays it out, made safe to print."""
        return visible(super().format(record))


def print_lines(logger: logging.Logger, prefix: str, stream: IO[str] | None = None) -> None:
    """Print ``logger``'s info records on ``stream`` (stderr), each as ``<prefix>: <message>``.

    Once per logger: a second call leaves the handler the first one added.
    """
    if not logger.handlers:
        handler = logging.StreamHandler(stream or sys.stderr)
        handler.setFormatter(VisibleLines(f"{prefix}: %(message)s"))
        logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
