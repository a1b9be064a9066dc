"""Process exit codes of the CLI: an outcome's, or an error's, decided in one place each."""

from __future__ import annotations

from pydantic import ValidationError

from contracts import RunOutcome, TaskState
from graphs.errors import ExitCode, HandoffError

__all__ = ["EXPECTED_ERRORS", "ExitCode", "for_error", "for_outcome"]

_FOREIGN: tuple[tuple[type[Exception], ExitCode], ...] = (
    (ValidationError, ExitCode.USAGE),  # before ValueError, which it subclasses
    (OSError, ExitCode.FAILED),
    (ValueError, ExitCode.FAILED),
)
"""Exceptions of other libraries the CLI reports as errors rather than as bugs."""

EXPECTED_ERRORS: tuple[type[Exception], ...] = (HandoffError, *(kind for kind, _ in _FOREIGN))
"""What a command may fail with on bad input or a bad environment; anything else is a bug."""


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
    """Exit code of an error: the one its class states, else the one of its foreign kind."""
    if isinstance(error, HandoffError):
        return error.exit_code
    for kind, code in _FOREIGN:
        if isinstance(error, kind):
            return code
    return ExitCode.FAILED
