"""A worker's log lines reach the terminal with no raw control character of a thread's text."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from app.fleet.logs import JOBS, configure_worker_logging

HOSTILE = "objective \x1b]0;pwned\x07 \x1b[2J \x9b31m"
LOGGERS = ("procrastinate", "asyncio", "psycopg", "app.fleet", JOBS.name)


@pytest.fixture
def worker_stderr() -> Iterator[io.StringIO]:
    """The worker's logging, configured onto a buffer; the loggers are put back after."""
    saved = {
        name: (list(logger.handlers), logger.propagate, logger.level)
        for name in LOGGERS
        for logger in [logging.getLogger(name)]
    }
    for name in LOGGERS:
        logging.getLogger(name).handlers.clear()
    stream = io.StringIO()
    configure_worker_logging(stream)
    yield stream
    for name, (handlers, propagate, level) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)


def test_a_worker_log_line_writes_a_threads_escape_sequences_as_visible_text(
    worker_stderr: io.StringIO,
) -> None:
    JOBS.info("run t-1: failed (ContractViolation: %s) in 0.10 s", HOSTILE)
    try:
        raise ValueError(HOSTILE)
    except ValueError:
        logging.getLogger("procrastinate.worker").exception("job of thread t-1 failed")
    written = worker_stderr.getvalue()
    for raw in ("\x1b", "\x07", "\x9b"):
        assert raw not in written, raw
    assert written.count("\\x1b]0;pwned\\x07 \\x1b[2J \\x9b31m") == 2, written
    assert "Traceback (most recent call last):\n" in written, "a traceback keeps its lines"
