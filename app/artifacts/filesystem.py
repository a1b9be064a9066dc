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
from typing import Any

from pydantic import ValidationError

from app.artifacts.records import (
    Verification,
    candidate,
    check_id,
    parse_artifact_uri,
    recorded_revision,
    sha256_hex,
)
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import ArtifactError, ArtifactNotFound, IntegrityError, InvalidArtifactId

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


class FilesystemArtifactStore:
    """Revisioned, hash-verified artifact storage in one directory, safe across processes.

    Nothing is touched until the first write, so constructing a store for a path that is
    only ever read (or never used) leaves the filesystem as it was.
    """

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

    @staticmethod
    def _blob_name(sha256: str) -> str:
        return f"blobs/{sha256[:2]}/{sha256}"

    # -- history ---------------------------------------------------------------------

    def _load_history(self, artifact_id: str) -> list[ArtifactRef]:
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
        for position, ref in enumerate(refs, start=1):
            if ref.artifact_id != artifact_id or ref.revision != position:
                raise IntegrityError(
                    f"history of artifact {artifact_id!r} is inconsistent: entry {position} is "
                    f"{ref.artifact_id!r} revision {ref.revision}"
                )
        return refs

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

    def _read_blob(self, ref: ArtifactRef) -> bytes:
        """Bytes of a revision, verified; errors name the uri, revision and blob."""
        try:
            content = _read_nofollow(self._path(*self._blob_parts(ref.sha256)))
        except FileNotFoundError as exc:
            raise ArtifactNotFound(
                f"{ref.uri} revision {ref.revision}: blob {self._blob_name(ref.sha256)} "
                "is missing from the store"
            ) from exc
        actual = sha256_hex(content)
        if actual != ref.sha256:
            raise IntegrityError(
                f"{ref.uri} revision {ref.revision}: blob {self._blob_name(ref.sha256)} was "
                f"modified on disk; expected sha256 {ref.sha256}, actual {actual}"
            )
        return content

    def _recorded(self, ref: ArtifactRef) -> tuple[ArtifactRef, list[ArtifactRef]]:
        """The store's own record of ref's revision, so a forged ref cannot fetch bytes."""
        history = self._load_history(check_id(ref.artifact_id))
        return recorded_revision(ref, history), history

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
            history = self._load_history(artifact_id)
            if history:
                head = history[-1]
                if head.kind != kind:
                    raise ArtifactError(
                        f"artifact {artifact_id!r} is a {head.kind!r} artifact and cannot be "
                        f"stored as {kind!r}; use a different artifact id"
                    )
                if head.sha256 == sha256 and head.media_type == media_type:
                    return head
            ref = first.model_copy(update={"revision": len(history) + 1})
            self._save_history(artifact_id, [*history, ref])
            return ref

    def get(self, ref: ArtifactRef | dict[str, Any]) -> bytes:
        """The bytes of exactly that revision, verified against its sha256."""
        checked = ArtifactRef.model_validate(ref)
        recorded, _ = self._recorded(checked)
        return self._read_blob(recorded)

    def head(self, artifact_id: str) -> ArtifactRef | None:
        """The latest revision, or None if the artifact was never stored."""
        history = self.history(artifact_id)
        return history[-1] if history else None

    def history(self, artifact_id: str) -> list[ArtifactRef]:
        """Every revision, oldest first."""
        return self._load_history(check_id(artifact_id))

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

    def get_uri(self, uri: str, revision: int | None = None) -> tuple[ArtifactRef, bytes]:
        """Resolve an ``artifact://`` address to a ref and its bytes; the head by default."""
        kind, artifact_id = parse_artifact_uri(uri)
        history = self._load_history(artifact_id)
        if not history:
            raise ArtifactNotFound(f"{uri} is not in the store")
        if revision is None:
            ref = history[-1]
        elif 1 <= revision <= len(history):
            ref = history[revision - 1]
        else:
            raise ArtifactNotFound(
                f"{uri} has no revision {revision}; the head is revision {len(history)}"
            )
        if ref.kind != kind:
            raise ArtifactNotFound(f"{uri} is not in the store; {artifact_id!r} is a {ref.kind!r}")
        return ref, self._read_blob(ref)

    def verify(self, ref: ArtifactRef | dict[str, Any]) -> Verification:
        """Classify a ref without raising, so callers can decide how to treat old inputs."""
        checked = ArtifactRef.model_validate(ref)
        try:
            recorded, history = self._recorded(checked)
            self._read_blob(recorded)
        except ArtifactNotFound:
            return "missing"
        except IntegrityError:
            return "tampered"
        return "stale" if recorded.revision < len(history) else "fresh"
