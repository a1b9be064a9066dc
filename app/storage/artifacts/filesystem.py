"""An artifact store on the local filesystem: content-addressed blobs plus per-id histories.

Layout under the root::

    blobs/<sha[:2]>/<sha>       bytes, named by their sha256 and written once
    refs/<artifact_id>.json     the revision history, a JSON list of ArtifactRef, oldest first
    locks/<artifact_id>.lock    held with flock while a history is read and extended
    locks/.blobs.lock           held shared by every put, exclusively by a sweep

Every file is written to a temp file in its own directory, fsynced, and moved into place
with ``os.replace``, so a reader sees either the old or the new file, never half of one. A
blob (file and directory) is durable before the history naming it is written; a history's
new name is durable when ``put`` returns, or at the end of the enclosing :meth:`batch`.
Blobs are shared by content; a sweep deletes one only while no put is between finding
its blob stored and naming it in a history, and only when no history names it.
Paths are checked with one ``lstat`` per directory and ``O_NOFOLLOW`` opens: no link is
followed, so nothing outside the root is read or written.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Collection, Iterator
from pathlib import Path

from pydantic import ValidationError

from app.storage.artifacts import files
from app.storage.artifacts.base import ArtifactStoreBase
from app.storage.artifacts.batching import BatchedSyncs
from app.storage.artifacts.folder_blobs import FolderBlobs
from app.storage.artifacts.records import candidate, check_entry, check_id, next_revision
from app.storage.file_digests import DIGESTS, FileDigests
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import IntegrityError, InvalidArtifactId

BLOBS_LOCK = ".blobs"
"""The lock a put holds shared and a sweep exclusively (no artifact id starts with a dot)."""


class FilesystemArtifactStore(FolderBlobs, BatchedSyncs, ArtifactStoreBase[None]):
    """Revisioned, hash-verified artifact storage in one directory, safe across processes.

    Nothing is touched until the first write, so constructing a store for a path that is
    only ever read (or never used) leaves the filesystem as it was.

    A put is durable when it returns. Inside :meth:`batch` the fsync of the history
    directory is taken once at the end of the block for all its puts instead (the node
    runner batches one node's puts, before anything records their refs).
    """

    def __init__(self, root: Path, digests: FileDigests = DIGESTS) -> None:
        FolderBlobs.__init__(self, root, digests)
        BatchedSyncs.__init__(self)
        self._unsynced: set[str] = set()
        self._sync_lock = threading.Lock()

    def _session(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    # -- history ---------------------------------------------------------------------

    def _load_history(self, session: None, artifact_id: str) -> list[ArtifactRef]:
        name = f"{artifact_id}.json"
        try:
            raw = files.read_fd(self._open(self._dir("refs"), f"refs/{name}", os.O_RDONLY))
        except FileNotFoundError:
            return []
        try:
            entries = json.loads(raw)
            if not isinstance(entries, list):
                raise TypeError("the history is not a JSON list")
            refs = [ArtifactRef.model_validate(entry) for entry in entries]
        except (ValueError, TypeError, ValidationError) as exc:
            raise IntegrityError(
                f"history of artifact {artifact_id!r} (refs/{name}) is unreadable: {exc}"
            ) from exc
        return [check_entry(artifact_id, position, ref) for position, ref in enumerate(refs, 1)]

    def _save_history(self, artifact_id: str, refs: list[ArtifactRef]) -> None:
        payload = json.dumps([ref.model_dump(mode="json") for ref in refs], indent=2)
        directory = self._ensure_dir("refs")
        name = f"{artifact_id}.json"
        files.atomic_write(directory, name, payload.encode() + b"\n", sync_dir=not self._in_batch)

    # -- batches -----------------------------------------------------------------------

    def sync(self) -> None:
        """Fsync every history directory a batched put left pending (any thread's).

        Held under a lock so that a caller never returns while another thread is still
        syncing a directory it took off the pending set.
        """
        with self._sync_lock:
            while self._unsynced:
                directory = min(self._unsynced)
                files.fsync(directory)
                self._unsynced.discard(directory)

    @contextlib.contextmanager
    def _locked(self, name: str, mode: int = fcntl.LOCK_EX) -> Iterator[None]:
        """Hold ``locks/<name>.lock``: one history's read-modify-write, or the blobs.

        Across threads and processes: each hold opens the file anew, and flock is per open.
        """
        relative = f"locks/{name}.lock"
        fd = self._open(self._ensure_dir("locks"), relative, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    # -- public API --------------------------------------------------------------------

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""
        # Validate id, kind and media type before anything touches the disk.
        content, first = candidate(artifact_id, kind, content, media_type)
        sha256 = first.sha256
        with self._locked(BLOBS_LOCK, fcntl.LOCK_SH):  # no sweep between blob and history
            self._write_blob(sha256, content)
            with self._locked(artifact_id):
                history = self._load_history(None, artifact_id)
                head = history[-1] if history else None
                ref = next_revision(first, head.kind if head else None, head)
                if ref is not head:
                    self._save_history(artifact_id, [*history, ref])
                if self._in_batch:
                    # Even an unchanged head is synced at the end of the batch: its history
                    # may have been written by a batch (here or in another process) not
                    # synced yet.
                    with self._sync_lock:
                        self._unsynced.add(self._dir("refs"))
                return ref

    def close(self) -> None:
        """Nothing is held open between calls."""

    def ids(self) -> list[str]:
        """Every stored artifact id, sorted."""
        try:
            names = os.listdir(self._dir("refs"))
        except FileNotFoundError:
            return []
        found: list[str] = []
        for name in names:
            if not name.endswith(".json"):
                continue
            stem = name.removesuffix(".json")
            with contextlib.suppress(InvalidArtifactId):
                found.append(check_id(stem))
        return sorted(found)

    def forget(self, artifact_ids: Collection[str]) -> None:
        """Delete the histories of ``artifact_ids``; their blobs stay until :meth:`sweep`."""
        for artifact_id in artifact_ids:
            with self._locked(check_id(artifact_id)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{self._dir('refs')}/{artifact_id}.json")
                with contextlib.suppress(FileNotFoundError):  # its thread is locked: no put waits
                    os.unlink(f"{self._dir('locks')}/{artifact_id}.lock")
        with contextlib.suppress(FileNotFoundError):
            files.fsync(self._dir("refs"))

    def sweep(self, sha256s: Collection[str]) -> set[str]:
        """Delete each of these blobs no history names, holding every put off meanwhile."""
        with self._locked(BLOBS_LOCK):
            named = {sha256 for refs in self.blobs_by_artifact().values() for sha256 in refs}
            return self._delete_blobs(set(sha256s) - named)
