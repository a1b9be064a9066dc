"""What a worker prints: one line per record, a lost database as its reason.

A record can quote a thread's text (an error naming an objective, a traceback's message),
so every line is written with its control characters made visible, as the CLI writes.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import IO, TYPE_CHECKING, Any, TypeVar

from app.fleet.outage import (
    WaitEnded,
    lost,
    reason_of,
)
from app.log_lines import VisibleLines, print_lines

if TYPE_CHECKING:
    pass

_T = TypeVar("_T")
log = logging.getLogger(__name__)
JOBS = logging.getLogger("handoff.worker.jobs")
"""One line per job a worker ran: its kind, thread, how it ended and how long it took."""


def _wait_ended(record: logging.LogRecord) -> bool:
    """False for a record about a WaitEnded: the error the worker exits with says it."""
    error = record.exc_info[1] if record.exc_info else None
    while error is not None:
        if isinstance(error, WaitEnded):
            return False
        error = error.__cause__
    return True


class _OneLineOutages(VisibleLines):
    """Log lines as they are, except that a lost database is a reason, not a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and lost(record.exc_info[1]):
            error = record.exc_info[1]
            assert error is not None
            record = logging.makeLogRecord(
                {**record.__dict__, "exc_info": None, "exc_text": None, "args": None}
                | {"msg": f"{record.getMessage()} ({reason_of(error, '')})"}
            )
        return super().format(record)


def configure_worker_logging(stream: IO[str] | None = None) -> None:
    """What a worker process prints on stderr: warnings and errors, one line each.

    Procrastinate's and asyncio's records and this module's go to one handler; a record
    caused by a lost database carries its reason instead of a traceback (the outage itself
    is reported once, by the OutageWatch). Any other error keeps its traceback: that is a
    bug to see. psycopg's own warnings ("error ignored terminating <Pipeline>: the
    connection is lost") are cleanup after a connection already reported lost, so only its
    errors are shown. Called once, at the edge (``handoff worker``).
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLineOutages("worker: %(message)s"))
    handler.addFilter(_wait_ended)
    for name, level in (
        ("procrastinate", logging.WARNING),
        ("asyncio", logging.WARNING),
        ("psycopg", logging.ERROR),
        (__name__.rpartition(".")[0], logging.WARNING),  # app.fleet: each of its modules
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(h.formatter, _OneLineOutages) for h in logger.handlers):
            logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(level)
    configure_job_lines(stream)


def configure_job_lines(stream: IO[str] | None = None) -> None:
    """One line per job on stderr (``run fleet-3: TASK_STATE_COMPLETED in 1.42 s``)."""
    print_lines(JOBS, "worker", stream)


def report_task_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A job task that ended on a lost database (its status could not be saved): one line.

    Its job stays ``running`` in the queue; a live worker re-queues it once this worker's
    heartbeat is stale. Anything else goes to asyncio's default handler.
    """
    error = context.get("exception")
    if lost(error):
        assert error is not None
        task = context.get("task") or context.get("future")
        name = task.get_name() if isinstance(task, asyncio.Task) else "a task"
        log.warning("%s ended without saving its status: %s", name, reason_of(error, ""))
        return
    loop.default_exception_handler(context)
