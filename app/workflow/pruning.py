"""Retention: ended threads past an age removed with what they stored; every other one stays.

What goes with a thread: its artifacts' histories, and each blob no other revision names
(blobs are shared by content, across artifacts and threads); its audit rows; then its
checkpoints, through the saver's ``delete_thread``. Checkpoints go last, so a prune cut
short leaves the thread listed, and the next prune finishes it; the blobs are swept once
the threads are done.

What stays: a thread that has not ended (waiting for a person, running, or stopped
mid-run: its outcome is not terminal), one whose lock another process holds, and one the
Workflow's guard says is held (the worker fleet's queued or running jobs). Each thread is
removed holding its lock, its state read again under it, so no run can start on it
meanwhile.

Research's cache goes too: the parsed documents and corpus indexes it kept under the data
folder and has not read for the same age (a read marks a file used; one removed is parsed
again when a corpus holds those bytes again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.agents.selection import parsed_documents
from app.errors import ThreadBusy, ThreadNotFound
from app.storage.thread_rows import ThreadRows, thread_rows
from app.workflow.opened import Opened
from app.workflow.reading import ThreadReader
from app.workflow.running import Runner
from graphs.errors import UsageError


@dataclass(frozen=True)
class PrunedThread:
    """A thread a prune removed (or, in a dry run, would remove)."""

    thread_id: str
    age: timedelta
    """Since its latest checkpoint, written when it ended."""
    bytes: int
    """Its rows in every table keyed by thread id, and the blobs no other thread names."""


@dataclass(frozen=True)
class PruneReport:
    """What a prune removed, or in a dry run would remove, and what it left and why."""

    dry_run: bool
    pruned: tuple[PrunedThread, ...]
    kept: tuple[tuple[str, str], ...]
    """Threads old enough that stay: (thread id, why: its lock is held, or its job queued)."""
    unused_files: int = 0
    """Parsed documents and corpus indexes research kept and has not read for the age."""
    unused_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        """The bytes of every thread pruned."""
        return sum(thread.bytes for thread in self.pruned)

    @classmethod
    def added(cls, reports: Iterable[PruneReport]) -> PruneReport:
        """Several prunes as one: each of a project's graphs prunes its own threads."""
        found = list(reports)
        return cls(
            found[0].dry_run,
            tuple(thread for report in found for thread in report.pruned),
            tuple(kept for report in found for kept in report.kept),
            sum(report.unused_files for report in found),
            sum(report.unused_bytes for report in found),
        )


class Pruner:
    """Removes ended threads past an age, each under its lock (see the module docstring)."""

    def __init__(self, opened: Opened, reader: ThreadReader, runner: Runner) -> None:
        self.opened = opened
        self.reader = reader
        self.runner = runner

    def prune(
        self, older_than: timedelta, keep_last: int, dry_run: bool, now: datetime | None
    ) -> PruneReport:
        """Oldest first; the ``keep_last`` most recently ended threads stay, however old."""
        if keep_last < 0:
            raise UsageError(f"keep_last: expected 0 or more threads to keep, got {keep_last}")
        if older_than < timedelta(0):
            raise UsageError(f"older_than: expected a duration of 0 or more, got {older_than}")
        backend = self.opened.backend
        threads = self.reader.graph_threads()
        now = now or self.opened.context.clock()
        if now.tzinfo is None:
            raise UsageError(f"now: expected a time with its time zone, got {now.isoformat()}")
        blobs = Blobs(backend.store.blobs_by_artifact(), threads)
        pruned: list[PrunedThread] = []
        kept: list[tuple[str, str]] = []
        swept: set[str] = set()
        with thread_rows(backend, read_only=dry_run) as rows:
            try:
                for thread_id, ended in self._due(threads, now - older_than, keep_last):
                    try:
                        size = self._take(thread_id, ended, rows, blobs, None if dry_run else swept)
                    except ThreadBusy as busy:
                        kept.append((thread_id, busy.message))
                        continue
                    if size is not None:
                        pruned.append(PrunedThread(thread_id, now - ended, size))
            finally:
                if swept:
                    backend.store.sweep(swept)
        unused = parsed_documents(self.opened.settings).unused_since((now - older_than).timestamp())
        if not dry_run:
            for path, _ in unused:
                path.unlink(missing_ok=True)
        return PruneReport(
            dry_run,
            tuple(pruned),
            tuple(kept),
            unused_files=len(unused),
            unused_bytes=sum(size for _, size in unused),
        )

    def _take(
        self,
        thread_id: str,
        ended: datetime,
        rows: ThreadRows,
        blobs: Blobs,
        swept: set[str] | None,
    ) -> int | None:
        """The thread's bytes, and the thread removed unless ``swept`` is None (a dry run).

        Under the thread's lock: ThreadBusy (or the guard's ThreadQueued) if it is held
        elsewhere; None if it is gone or moved on since it was listed. Its blobs join
        ``swept`` before anything is removed.
        """
        with self.opened.backend.writing(thread_id):
            if self._ended_at(thread_id) != ended:
                return None
            self.runner.refuse_if_held(thread_id, "it was not pruned")
            size = rows.size(thread_id) + blobs.freed_by(thread_id)
            if swept is not None:
                swept |= blobs.named_by(thread_id)
                self._remove(thread_id, blobs.owned(thread_id), rows)
            return size

    def _ended_at(self, thread_id: str) -> datetime | None:
        """When the thread's latest checkpoint was written, if the thread has ended."""
        try:
            summary = self.reader.summary(thread_id)
        except ThreadNotFound:
            return None
        if not summary.outcome.state.ended or summary.updated_at is None:
            return None
        return datetime.fromisoformat(summary.updated_at)

    def _due(
        self, threads: list[str], cutoff: datetime, keep_last: int
    ) -> list[tuple[str, datetime]]:
        """Ended threads that ended before ``cutoff``, oldest first, the newest kept."""
        ended = sorted(
            ((at, thread) for thread in threads if (at := self._ended_at(thread))), reverse=True
        )
        return [(thread, at) for at, thread in reversed(ended[keep_last:]) if at < cutoff]

    def _remove(self, thread_id: str, artifact_ids: list[str], rows: ThreadRows) -> None:
        """Artifacts, audit, then checkpoints: the thread stays listed until the last."""
        self.opened.backend.store.forget(artifact_ids)
        rows.delete_audit(thread_id)
        self.opened.saver.delete_thread(thread_id)


class Blobs:
    """Which blobs each thread's artifacts name, and which a thread's removal frees."""

    def __init__(self, by_artifact: dict[str, dict[str, int]], threads: Collection[str]) -> None:
        self.by_artifact = by_artifact
        self.by_thread = owners(by_artifact, threads)
        self.naming = Counter(sha256 for named in by_artifact.values() for sha256 in named)
        """How many artifacts not yet removed name each blob."""

    def owned(self, thread_id: str) -> list[str]:
        """The thread's artifact ids."""
        return self.by_thread.get(thread_id, [])

    def named_by(self, thread_id: str) -> set[str]:
        """Every blob the thread's artifacts name."""
        return {sha256 for aid in self.owned(thread_id) for sha256 in self.by_artifact[aid]}

    def freed_by(self, thread_id: str) -> int:
        """Bytes of the blobs only this thread's artifacts (and those removed) name."""
        freed = 0
        for artifact_id in self.owned(thread_id):
            for sha256, size in self.by_artifact[artifact_id].items():
                self.naming[sha256] -= 1
                if self.naming[sha256] == 0:
                    freed += size
        return freed


def owners(artifact_ids: Iterable[str], threads: Collection[str]) -> dict[str, list[str]]:
    """Each thread's artifact ids: ``<thread>-<name>`` (``graphs.ports.scoped_artifact_id``).

    A thread id may hold '-' too, so an artifact is the thread's whose id is the longest
    that starts it: ``a-b-draft`` is thread ``a-b``'s when both ``a`` and ``a-b`` exist.
    An artifact of no listed thread is no thread's.
    """
    known = set(threads)
    found: dict[str, list[str]] = {}
    for artifact_id in artifact_ids:
        cut = artifact_id.rfind("-")
        while cut > 0 and artifact_id[:cut] not in known:
            cut = artifact_id.rfind("-", 0, cut)
        if cut > 0:
            found.setdefault(artifact_id[:cut], []).append(artifact_id)
    return found
