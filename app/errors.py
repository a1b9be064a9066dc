"""Errors the Python API raises to its callers, each with the exit code the CLI ends with."""

from __future__ import annotations

from contracts import ErrorCode, HumanRequest, RunOutcome
from graphs.errors import ArtifactNotFound, ExitCode, HandoffError, NotFound, UsageError


class ThreadNotFound(NotFound):
    """No thread with that id exists in the checkpoint store."""


class UnknownGraph(UsageError):
    """A graph langgraph.json does not declare, or an entry naming no wiring."""


class UnknownNode(UsageError):
    """A breakpoint naming no node of the graph run."""


class WrongGraph(UsageError):
    """A thread addressed with another graph than the one that made it."""


class ThreadExists(UsageError):
    """A new run was asked for on a thread id that already has history."""


class CheckpointNotLatest(UsageError):
    """A run asked to start from a checkpoint other than its thread's latest: a fork."""


class ThreadMovedOn(UsageError):
    """A run checked against a thread's latest checkpoint found another when it started.

    What was checked no longer holds (a revision against a task that has changed since):
    the run is refused unrun, and sent again it is checked against the thread as it is now.
    """


class InvalidThreadId(UsageError):
    """A thread id that cannot be used to name artifacts safely."""


class ThreadFinished(UsageError):
    """A resume was asked for on a thread that has already ended."""

    exit_code = ExitCode.ALREADY_FINISHED

    def __init__(self, message: str, outcome: RunOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class DecisionRequired(HandoffError, ValueError):
    """The thread waits for a human decision and none was given."""

    code = ErrorCode.MISSING_INPUT
    exit_code = ExitCode.WAITING_FOR_HUMAN

    def __init__(self, message: str, request: HumanRequest | None) -> None:
        super().__init__(message)
        self.request = request


class InvalidDecision(UsageError):
    """A human decision that does not answer the open request; nothing was saved."""


class RequestExpired(UsageError):
    """A decision came after its request expired: refused, the pause's default recorded.

    The thread went on with that default (``outcome``) before this was raised, so the
    request is answered once, whichever way in came first.
    """

    def __init__(self, message: str, outcome: RunOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class InvalidRevision(UsageError):
    """A task revision that fails its contract or cannot apply to the thread's task."""


class NotWaiting(UsageError):
    """A decision was given for a thread that is not waiting for one."""


class InvalidEdit(UsageError):
    """A person's revision of an artifact that no later step could read; nothing is stored."""


class UnknownArtifactName(NotFound):
    """An artifact name that the thread does not (yet) have."""


class ThreadBusy(HandoffError, RuntimeError):
    """Another process is running or resuming the thread; nothing was changed."""

    code = ErrorCode.TRANSIENT
    exit_code = ExitCode.THREAD_BUSY


class DatabaseUnavailable(HandoffError, RuntimeError):
    """The database could not be reached, or the connection was lost during a run.

    The thread keeps its last saved checkpoint; resume it once the database is back.
    """

    code = ErrorCode.TRANSIENT
    exit_code = ExitCode.DATABASE_UNAVAILABLE


class DatabaseMissing(UsageError):
    """The PostgreSQL server answered, and has no database, or no role, the URL names.

    Not an outage: no waiting brings either back, so it is not DatabaseUnavailable (exit 9,
    "resume once it is back") but a configuration error (exit 2): create the database
    (``createdb``) or the role (``createuser``), or name an existing one.
    """


class StorageDamaged(HandoffError, RuntimeError):
    """The database file is not a handoff database any more (garbled, truncated, emptied).

    Nothing is written to it: repairing or restoring it is for a person, and writing would
    turn what is left into an empty store that looks healthy.
    """

    code = ErrorCode.INTEGRITY_ERROR
    exit_code = ExitCode.STORAGE_DAMAGED


class StorageFull(HandoffError, RuntimeError):
    """A write failed for lack of space; what was saved before it stays as it was.

    A run stops at the step it could not save; resume it once space is freed.
    """

    code = ErrorCode.TRANSIENT
    exit_code = ExitCode.STORAGE_FULL


class UnknownContract(UsageError, LookupError):
    """A contract name that is not one of the exported top-level contracts."""


class QueueUnavailable(UsageError):
    """The worker fleet was asked for where it cannot run (no PostgreSQL, no queue extra)."""


class SubmitUsage(UsageError):
    """``handoff submit`` given options that do not make one task or one decision."""


class ArtifactLost(ArtifactNotFound):
    """A revision the store recorded (or a thread holds a ref to) whose bytes are gone.

    Not an unknown name the caller can correct (exit 5): the thread says the bytes existed
    and the store no longer has them, which is damage to the store, reported as an
    integrity error (exit 8) like bytes that no longer match their sha256. It stays an
    ArtifactNotFound, so freshness checks still classify the input as missing.
    """

    exit_code = ExitCode.INTEGRITY


class ThreadQueued(ThreadBusy):
    """The worker fleet has a job of the thread queued or running; nothing was changed.

    That job brings the thread as far as it goes. A run, resume, cancel or submission in
    between would drop it (its objective never run, its approval gate skipped) or fork the
    thread, so it is refused until the job has finished; exit code 7, as for a busy thread.
    """

    def __init__(self, message: str, *, job_id: int, task: str) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.task = task


class DecisionConflict(UsageError):
    """A decision for a request another decision already answers (queued, running or done).

    Decisions for one thread are serialized: the first one queued is the answer, a
    different one is refused naming it, and nothing is queued.
    """

    def __init__(self, message: str, *, job_id: int) -> None:
        super().__init__(message)
        self.job_id = job_id
