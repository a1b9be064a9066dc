"""The workflow's error hierarchy: builtin bases, stable codes, and the exit code of each.

``ExitCode`` lives here, beside the errors, so that every error class states the exit code
a script sees for it; the CLI reads ``error.exit_code`` and maps nothing itself.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar

from contracts import ErrorCode


class ExitCode(IntEnum):
    """What a script can rely on; documented in docs/cli.md."""

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
    STORAGE_DAMAGED = 10
    STORAGE_FULL = 11


class HandoffError(Exception):
    """Base of every error this project raises on purpose."""

    code: ErrorCode = ErrorCode.INTERNAL
    exit_code: ClassVar[ExitCode] = ExitCode.FAILED

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(HandoffError, ValueError):
    """Base of the errors the caller corrects by asking differently: invalid input, exit 2."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


class NotFound(HandoffError, LookupError):
    """Base of a name or id that names nothing the store has: missing input, exit 5."""

    code = ErrorCode.MISSING_INPUT
    exit_code = ExitCode.NOT_FOUND


class ContractViolation(HandoffError, ValueError):
    """A value crossing a node boundary does not satisfy its contract."""

    code = ErrorCode.INVALID_OUTPUT

    def __init__(self, message: str, *, node: str, channel: str, fields: list[str]) -> None:
        super().__init__(message)
        self.node = node
        self.channel = channel
        self.fields = fields


class TransientError(HandoffError, RuntimeError):
    """A failure that may pass on retry (a timeout, a busy resource); retried with backoff."""

    code = ErrorCode.TRANSIENT


class ArtifactError(HandoffError, ValueError):
    """Base for artifact store problems."""

    code = ErrorCode.INVALID_INPUT


class InvalidArtifactId(ArtifactError):
    """An artifact id or URI that could address something outside the store."""


class ArtifactNotFound(ArtifactError, LookupError):
    """The artifact, revision or blob does not exist."""

    code = ErrorCode.MISSING_INPUT
    exit_code = ExitCode.NOT_FOUND


class IntegrityError(ArtifactError):
    """Stored bytes no longer match the sha256 they were recorded with."""

    code = ErrorCode.INTEGRITY_ERROR
    exit_code = ExitCode.INTEGRITY


class StaleInput(HandoffError):
    """An input a node was handed changed or went away before the node read it.

    Raised at the boundary for artifacts of channels the task's ``on_stale`` policy does not
    route (``graphs.freshness.OWN_RULES``): nothing was consumed and the thread waits at
    the step, for the revision it was handed to be restored, or for a revision of the task.
    """

    code = ErrorCode.STALE_INPUT
    exit_code = ExitCode.INTEGRITY


class EmptyFanOut(HandoffError, ValueError):
    """A fan-out whose keys function gave no key (or one twice): nothing would run."""


class MissingContext(HandoffError, RuntimeError):
    """A node ran without the runtime services it needs."""


class SourceRefused(UsageError):
    """A corpus path or source that may not be read, and why (one line).

    Run inputs name files, and anyone who can start a run (a dev-server client, too) names
    them; so a path outside the allowed folders, anything but a regular file, or a file over
    the size limit is refused before it is opened. A usage error: the input must change.
    """


class WiringError(HandoffError, ValueError):
    """The wiring leaves something out that would otherwise only show at run time, or never.

    A node no route reaches, a route to no node, a router a pause shares with another
    node, or an agent request read from a channel its node does not declare:
    ``build_graph`` refuses each, naming it.
    """


class Omitted(WiringError):
    """What a declaration leaves out, found only when the run reaches it: the run fails.

    A tool called by a node that does not declare it, a channel read by a body whose node
    does not declare it, or a join that drops a branch's output. Answering it quietly
    (``permission_denied``, a repair, a partial merge) would let the run succeed without
    the work, or retry what no retry mends; the declaration must change, so the run stops
    naming it.
    """
