"""Errors the Python API raises to its callers; the CLI maps each to an exit code."""

from __future__ import annotations

from contracts import ErrorCode
from graphs.errors import HandoffError


class ThreadNotFound(HandoffError, LookupError):
    """No thread with that id exists in the checkpoint store."""

    code = ErrorCode.MISSING_INPUT


class ThreadExists(HandoffError, ValueError):
    """A new run was asked for on a thread id that already has history."""

    code = ErrorCode.INVALID_INPUT


class InvalidThreadId(HandoffError, ValueError):
    """A thread id that cannot be used to name artifacts safely."""

    code = ErrorCode.INVALID_INPUT


class UnknownArtifactName(HandoffError, LookupError):
    """An artifact name that the thread does not (yet) have."""

    code = ErrorCode.MISSING_INPUT
