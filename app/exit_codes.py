"""Process exit codes of the CLI, mapped in one place."""

from __future__ import annotations

from enum import IntEnum

from pydantic import ValidationError

from app.errors import (
    DatabaseUnavailable,
    DecisionRequired,
    InvalidDecision,
    InvalidThreadId,
    NotWaiting,
    ThreadBusy,
    ThreadExists,
    ThreadFinished,
    ThreadNotFound,
    UnknownArtifactName,
)
from contracts import RunOutcome, TaskState


class ExitCode(IntEnum):
    """What a script can rely on; documented in the README."""

    COMPLETED = 0
    FAILED = 1
    USAGE = 2
    WAITING_FOR_HUMAN = 3
    PARTIAL = 4
    NOT_FOUND = 5
    ALREADY_FINISHED = 6
    THREAD_BUSY = 7
    INTEGRITY = 8
    DATABASE_UNAVAILABLE = 9


def for_outcome(outcome: RunOutcome) -> ExitCode:
    """Exit code of a run that ended (or paused) with this outcome."""
    if outcome.state == TaskState.INPUT_REQUIRED:
        return ExitCode.WAITING_FOR_HUMAN
    if outcome.state == TaskState.COMPLETED and outcome.result_status == "completed":
        return ExitCode.COMPLETED
    if outcome.state == TaskState.COMPLETED and outcome.result_status == "partial":
        return ExitCode.PARTIAL
    return ExitCode.FAILED


def for_error(error: BaseException) -> ExitCode:
    """Exit code of an error raised by the Python API."""
    from graphs.errors import IntegrityError

    if isinstance(error, ThreadFinished):
        return ExitCode.ALREADY_FINISHED
    if isinstance(error, ThreadBusy):
        return ExitCode.THREAD_BUSY
    if isinstance(error, DatabaseUnavailable):
        return ExitCode.DATABASE_UNAVAILABLE
    if isinstance(error, DecisionRequired):
        return ExitCode.WAITING_FOR_HUMAN
    if isinstance(error, (ThreadNotFound, UnknownArtifactName)):
        return ExitCode.NOT_FOUND
    if isinstance(
        error, (InvalidThreadId, ThreadExists, ValidationError, InvalidDecision, NotWaiting)
    ):
        return ExitCode.USAGE
    if isinstance(error, IntegrityError):
        return ExitCode.INTEGRITY
    return ExitCode.FAILED
