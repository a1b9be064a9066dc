"""An artifact store in this process: the other stores' guarantees, gone when it exits.

For tests, ``make check`` and quick trials beside a ``memory://`` database, chosen with
``HANDOFF_ARTIFACT_STORE=memory``. Blobs are kept by sha256 and each history as the JSON
rows a database store keeps, so every read is verified and every history checked exactly
as in the stores that persist: a ref the store did not record, or bytes changed behind
its back, are refused the same way.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection

from app.storage.artifacts.base import ArtifactStoreBase
from app.storage.artifacts.records import candidate, check_id, next_revision, parse_entry
from contracts import ArtifactKind, ArtifactRef


class MemoryArtifactStore(ArtifactStoreBase[None]):
    """Revisioned, hash-verified artifacts in dicts; safe across this process's threads."""

    modified_where = "in memory"
    outlives_process = False
    """Refused beside checkpoints that outlive the process (``check_kept_with``)."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        """Bytes by sha256 (tests may damage them, as a disk or database could be)."""
        self.histories: dict[str, list[str]] = {}
        """Each artifact's revisions as JSON rows, oldest first."""
        self._lock = threading.Lock()

    def _session(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def _load_history(self, session: None, artifact_id: str) -> list[ArtifactRef]:
        rows = list(self.histories.get(artifact_id, ()))
        return [parse_entry(artifact_id, position, row) for position, row in enumerate(rows, 1)]

    def _fetch_blob(self, session: None, sha256: str) -> bytes | None:
        return self.blobs.get(sha256)

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""
        content, first = candidate(artifact_id, kind, content, media_type)
        with self._lock:
            self.blobs[first.sha256] = content  # also mends a damaged blob of that hash
            history = self._load_history(None, artifact_id)
            head = history[-1] if history else None
            ref = next_revision(first, head.kind if head else None, head)
            if ref is not head:
                self.histories.setdefault(artifact_id, []).append(ref.model_dump_json())
            return ref

    def ids(self) -> list[str]:
        """Every stored artifact id, sorted."""
        return sorted(check_id(artifact_id) for artifact_id in self.histories)

    def forget(self, artifact_ids: Collection[str]) -> None:
        """Delete the histories of ``artifact_ids``; their blobs stay until :meth:`sweep`."""
        with self._lock:
            for artifact_id in artifact_ids:
                self.histories.pop(artifact_id, None)

    def sweep(self, sha256s: Collection[str]) -> set[str]:
        """Delete each of these blobs no revision names, under the lock every put takes."""
        with self._lock:
            named = {
                parse_entry(artifact_id, position, row).sha256
                for artifact_id, rows in self.histories.items()
                for position, row in enumerate(rows, 1)
            }
            gone = {sha256 for sha256 in sha256s if sha256 not in named and sha256 in self.blobs}
            for sha256 in gone:
                del self.blobs[sha256]
            return gone

    def close(self) -> None:
        """Nothing is held open; the artifacts live as long as the store object."""
