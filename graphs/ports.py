"""The services the graph needs from the outside world, as protocols the app implements."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from contracts import ArtifactKind, ArtifactRef, NodeRun, Provenance, RefStatus
from graphs.budget import Tally


class ArtifactStore(Protocol):
    """Revisioned, hash-verified storage for everything too large for state."""

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""
        ...

    def get(self, ref: ArtifactRef) -> bytes:
        """The bytes of exactly that revision, verified against its sha256."""
        ...

    def head(self, artifact_id: str) -> ArtifactRef | None:
        """The latest revision, or None if the artifact was never stored."""
        ...

    def history(self, artifact_id: str) -> list[ArtifactRef]:
        """Every revision, oldest first."""
        ...

    def verify(self, ref: ArtifactRef) -> RefStatus:
        """fresh, stale (newer revision), tampered (bytes ≠ sha256) or missing; never raises."""
        ...

    def batch(self) -> AbstractContextManager[object]:
        """A block around one attempt's puts, ended before the ledger row that names them.

        A store that keeps blobs in files defers what its puts can share (one fsync instead
        of one per put) to the block's end; any other makes each put durable on its own and
        returns an empty block.
        """
        ...


class SourceProbe(Protocol):
    """Re-reads where a source came from, so edits on disk are noticed by hash."""

    def current_sha256(self, uri: str) -> str | None:
        """The sha256 of the source as it is now, or None if it is gone.

        Raises ``graphs.errors.SourceRefused`` (one line, saying why) for a source that
        may not be read at all.
        """
        ...


class RunLedger(Protocol):
    """The audit log beside the thread: one NodeRun per node attempt, in order.

    It also keeps each succeeded attempt's validated update, so a node re-run after a
    crash (same node, same input hash) reuses that result instead of working twice.
    """

    def start(self, thread_id: str, run: NodeRun) -> int:
        """Record an attempt that is starting; returns its sequence number."""
        ...

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Store the attempt's final record, and its update (JSON) when it succeeded.

        A record still ``running`` is the attempt's progress so far (its tool receipts),
        written as each call ends; it is replaced by the final one.
        """
        ...

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first."""
        ...

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of a succeeded attempt with this input, if any."""
        ...

    def latest_result(self, thread_id: str, node_id: str) -> str | None:
        """The stored update of the node's latest succeeded attempt, whatever its input.

        What a node last produced, as the ledger (not the checkpoint) recorded it: finalize
        compares the review it is handed against it, so a state edit cannot forge one.
        """
        ...

    def tool_effect(self, thread_id: str, call_id: str) -> str | None:
        """What the thread's write call ``call_id`` did (receipt, output as JSON), if it ran."""
        ...

    def record_tool_effect(self, thread_id: str, call_id: str, effect: str) -> None:
        """Record, durably, that the write call ran; the first record of a call stands."""
        ...

    def tally(
        self, thread_id: str, node_id: str, input_hash: str, fanned: Sequence[str] = ()
    ) -> Tally:
        """The thread's records summed for a visit of ``node_id`` on ``input_hash``.

        Exactly ``graphs.budget.tally_of`` over ``runs(thread_id)``, ``fanned`` naming the
        branch nodes of the visit's fan-out. A database sums the rows itself: a node's
        start then costs one small query, not a validated record per attempt so far.
        """
        ...


@dataclass(frozen=True)
class StepInfo:
    """Where a node runs: the thread, node and superstep, for ids and provenance."""

    thread_id: str
    node: str
    step: int
    task_version: int
    attempt: int = 1
    widen: bool = False
    tool_calls_left: int | None = None
    tokens_left: int | None = None
    branch: str | None = None
    """The key of the branch this step runs (a fanned-out task), else None."""
    begun_at: datetime | None = None
    """When the checkpoint this step runs from was made: the same on every re-run of the
    step (a resume), so a request made in it expires at the same instant each time."""
    decision_timeout: timedelta | None = None
    """How long a request this step puts to a person waits (the task's policy)."""

    def artifact_id(self, name: str) -> str:
        """Artifact ids are scoped per thread so threads never overwrite each other."""
        return scoped_artifact_id(self.thread_id, name)

    def branch_artifact_id(self, name: str) -> str:
        """An artifact each branch writes its own of (``<thread>-<name>-<key>``).

        Branches of one step run side by side: an artifact all of them wrote under one id
        would get their revisions in whatever order they finished. Outside a branch, the
        thread's ``artifact_id(name)``.
        """
        return self.artifact_id(f"{name}-{self.branch}" if self.branch else name)

    def provenance(self, producer: str | None = None) -> Provenance:
        """Provenance stamped on what this step produces."""
        return Provenance(producer=producer or self.node, node=self.node, step=self.step)


def scoped_artifact_id(thread_id: str, name: str) -> str:
    """The id of a thread's artifact: ``<thread>-<name>``.

    The name is the artifact's kind (``draft``, ``notes``, ``review``, ``article``), or the
    source id for a source snapshot; consumers check a ref against the id this gives, so
    another thread's artifact is never consumed as this thread's.
    """
    return f"{thread_id}-{name}"


def ref_id(ref: ArtifactRef) -> str:
    """An artifact revision as the audit names it: ``<artifact_id>@<revision>``."""
    return f"{ref.artifact_id}@{ref.revision}"
