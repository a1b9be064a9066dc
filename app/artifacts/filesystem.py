"""An artifact store on the local filesystem: content-addressed blobs plus per-id histories.

Layout under the root::

    blobs/<sha[:2]>/<sha>       bytes, named by their sha256 and written once
    refs/<artifact_id>.json     the revision history, a JSON list of ArtifactRef, oldest first
    locks/<artifact_id>.lock    held with flock while a history is read and extended

Every file is written to a temp file in its own directory and moved into place with
``os.replace``, so a reader sees either the old or the new file, never half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from app.artifacts.base import ArtifactStoreBase
from app.artifacts.records import candidate, check_entry, check_id, next_revision, sha256_hex
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import IntegrityError, InvalidArtifactId

_SHA_PATTERN = re.compile(r"[0-9a-f]{64}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable: the new directory entry must reach the disk too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(path: Path, content: bytes) -> None:
    """Readers see the old file or the new one; a crash leaves at most a stray temp file."""
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def _read_nofollow(path: Path) -> bytes:
    """Read without following a symlink swapped in after the path was checked."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


class FilesystemArtifactStore(ArtifactStoreBase[None]):
    """Revisioned, hash-verified artifact storage in one directory, safe across processes.

    Nothing is touched until the first write, so constructing a store for a path that is
    only ever read (or never used) leaves the filesystem as it was.
    """

    modified_where = "on disk"

    def __init__(self, root: Path) -> None:
        self._root = Path(root)
        self._resolved_root: Path | None = None
        self._made: set[tuple[str, ...]] = set()

    @property
    def root(self) -> Path:
        """The directory the store lives in."""
        return self._root

    # -- paths -----------------------------------------------------------------------

    def _path(self, *parts: str) -> Path:
        """Build a path under the root, refusing symlinks and anything resolving outside it.

        Ids are validated before they get here; this is the second line of defence against
        a link planted inside the store redirecting reads or writes elsewhere.
        """
        path = self._root
        for part in parts:
            path = path / part
            if path.is_symlink():
                relative = "/".join(path.relative_to(self._root).parts)
                raise InvalidArtifactId(
                    f"refusing store path {relative!r}: it is a symlink, and the store never "
                    "follows links that could lead outside it"
                )
        if self._resolved_root is None:
            self._resolved_root = self._root.resolve()
        # Every part is a validated name (no separators, no '..') and no component is a
        # link, so only the deepest existing directory needs resolving to confirm it.
        parent = path.parent
        if parts and not parent.resolve().is_relative_to(self._resolved_root):
            raise InvalidArtifactId(
                f"refusing store path {'/'.join(parts)!r}: it resolves outside the store root"
            )
        return path

    def _ensure_dir(self, *parts: str) -> Path:
        """Create directories one level at a time, checking each for links as it goes."""
        if parts in self._made and self._path(*parts).is_dir():
            return self._path(*parts)
        self._root.mkdir(parents=True, exist_ok=True)
        for depth in range(1, len(parts) + 1):
            self._path(*parts[:depth]).mkdir(exist_ok=True)
        self._made.add(parts)
        return self._path(*parts)

    @staticmethod
    def _blob_parts(sha256: str) -> tuple[str, str, str]:
        if _SHA_PATTERN.fullmatch(sha256) is None:
            raise IntegrityError(f"invalid sha256 {sha256!r}: expected 64 lower-case hex digits")
        return "blobs", sha256[:2], sha256

    def _blob_name(self, sha256: str) -> str:
        return f"blobs/{sha256[:2]}/{sha256}"

    def _session(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    # -- history ---------------------------------------------------------------------

    def _load_history(self, session: None, artifact_id: str) -> list[ArtifactRef]:
        path = self._path("refs", f"{artifact_id}.json")
        try:
            raw = _read_nofollow(path)
        except FileNotFoundError:
            return []
        try:
            entries = json.loads(raw)
            if not isinstance(entries, list):
                raise TypeError("the history is not a JSON list")
            refs = [ArtifactRef.model_validate(entry) for entry in entries]
        except (ValueError, TypeError, ValidationError) as exc:
            raise IntegrityError(
                f"history of artifact {artifact_id!r} (refs/{artifact_id}.json) is unreadable: "
                f"{exc}"
            ) from exc
        return [check_entry(artifact_id, position, ref) for position, ref in enumerate(refs, 1)]

    def _save_history(self, artifact_id: str, refs: list[ArtifactRef]) -> None:
        self._ensure_dir("refs")
        payload = json.dumps([ref.model_dump(mode="json") for ref in refs], indent=2)
        _atomic_write(self._path("refs", f"{artifact_id}.json"), payload.encode() + b"\n")

    @contextlib.contextmanager
    def _locked(self, artifact_id: str) -> Iterator[None]:
        """Serialise read-modify-write of one history across threads and processes."""
        self._ensure_dir("locks")
        path = self._path("locks", f"{artifact_id}.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    # -- blobs -----------------------------------------------------------------------

    def _write_blob(self, sha256: str, content: bytes) -> None:
        """Write bytes once; a blob already there is kept unless its bytes were damaged."""
        parts = self._blob_parts(sha256)
        self._ensure_dir(*parts[:2])
        path = self._path(*parts)
        try:
            if sha256_hex(_read_nofollow(path)) == sha256:
                return
        except FileNotFoundError:
            pass
        _atomic_write(path, content)

    def _fetch_blob(self, session: None, sha256: str) -> bytes | None:
        try:
            return _read_nofollow(self._path(*self._blob_parts(sha256)))
        except FileNotFoundError:
            return None

    # -- public API --------------------------------------------------------------------

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Store content; identical content to the head returns the head unchanged."""
        # Validate id, kind and media type before anything touches the disk.
        content, first = candidate(artifact_id, kind, content, media_type)
        sha256 = first.sha256
        self._write_blob(sha256, content)
        with self._locked(artifact_id):
            history = self._load_history(None, artifact_id)
            head = history[-1] if history else None
            ref = next_revision(first, head.kind if head else None, head)
            if ref is not head:
                self._save_history(artifact_id, [*history, ref])
            return ref

    def ids(self) -> list[str]:
        """Every stored artifact id, sorted."""
        try:
            refs_dir = self._path("refs")
            names = [entry.name for entry in refs_dir.iterdir()]
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
