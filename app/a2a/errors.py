"""The project's errors as A2A errors: the same one-line message every way in gives.

Which A2A error an error becomes follows the exit code its class states (the CLI's
mapping), so a new error class needs no entry here: bad input is invalid params, an
unknown thread is task-not-found, a busy or ended thread is an unsupported operation now.
Database passwords are masked, as on the CLI: a driver's error may quote the URL.
"""

from __future__ import annotations

from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from app.error_lines import error_line, redacted
from app.exit_codes import ExitCode, for_error
from graphs.errors import HandoffError

_BY_EXIT_CODE: dict[ExitCode, type[A2AError]] = {
    ExitCode.USAGE: InvalidParamsError,
    ExitCode.NOT_FOUND: TaskNotFoundError,
    ExitCode.ALREADY_FINISHED: UnsupportedOperationError,
    ExitCode.THREAD_BUSY: UnsupportedOperationError,
    ExitCode.WAITING_FOR_HUMAN: InvalidParamsError,
}


def a2a_error(error: Exception) -> A2AError:
    """The A2A error a client is sent for ``error``; its data names the project's error."""
    kind = _BY_EXIT_CODE.get(for_error(error), InternalError)
    code = error.code.value if isinstance(error, HandoffError) else type(error).__name__
    return kind(message=redacted(error_line(error)), data={"error": code})
