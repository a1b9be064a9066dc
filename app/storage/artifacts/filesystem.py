"""An artifact store on the local filesystem: content-addressed blobs plus per-id histories.

Layout under the root::

    blobs/<sha[:2]>/<sha>       bytes, named by their sha256 and written once
    refs/<artifact_id>.json     the revision history, a JSON list of ArtifactRef, oldest first
    locks/<artifact_id>.lock    held with flock while a history is read and extended

Every file is written to a temp file in its own directory, fsynced, and moved into place
with ``os.replace``, so a reader sees either the old or the new file, never half of one. A
blob (file and directory) is durable before the history naming it is written; a history's
new name is durable when ``put`` returns, or at the end of the enclosing :meth:`batch`.
Paths are checked with one ``lstat`` per directory and ``O_NOFOLLOW`` opens: no link is
followed, so nothing outside the root is read or written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from app.storage.artifacts.base import ArtifactStoreBase
from app.storage.artifacts.batching import BatchedSyncs
from app.storage.artifacts.records import candidate, check_entry, check_id, next_revision
from app.storage.file_digests import DIGESTS, FileDigests
from contracts import ArtifactKind, ArtifactRef
from graphs.errors import IntegrityError, InvalidArtifactId

_SHA_PATTERN = re.compile(r"[0-9a-f]{64}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _fsync_dir(directory: str) -> None:
    """Make a rename durable: the new directory entry must reach the disk too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(directory: str, name: str, content: bytes, *, sync_dir: bool = True) -> None:
    """Readers see the old file or the new one; a crash leaves at most a stray temp file.

    The bytes are fsynced before the rename, so a file it replaces is never seen
    half-written, even after a power loss; the directory is fsynced after it (unless the
    caller does that later, for several files at once) so the new name survives one too.
    The temp name is random and opened ``O_EXCL | O_NOFOLLOW`` (what
    ``tempfile.mkstemp`` does, without its per-call setup).
    """
    tmp = f"{directory}/.{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, f"{directory}/{name}")
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync_dir:
        _fsync_dir(directory)


def _read_fd(fd: int) -> bytes:
    """Every byte of an open file, then closed (read in one call when it can be)."""
    try:
        return _read_open(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _read_open(fd: int, size: int) -> bytes:
    """Every byte of an open file of about ``size`` bytes (read in one call when it can be)."""
    chunks = [os.read(fd, size + 1)]
    while chunks[-1]:  # a file that grew while it was read, or a short read
        chunks.append(os.read(fd, 1 << 20))
    return b"".join(chunks)


class FolderBlobs:
    """Content-addressed blobs in a folder: written once, fsynced, never read through a link.

    Nothing is touched until the first write, so constructing one for a path that is only
    ever read (or never used) leaves the filesystem as it was. The stores that keep their
    blobs in a folder add where their revision histories live.
    """

    modified_where = "on disk"
    """Where damaged bytes were changed, for messages."""

    def __init__(self, root: Path, digests: FileDigests = DIGESTS) -> None:
        self._root = Path(root)
        self._top = os.fspath(self._root)
        self._made: set[tuple[str, ...]] = set()
        self._digests = digests

    @property
    def root(self) -> Path:
        """The directory the store lives in."""
        return self._root

    # -- paths -----------------------------------------------------------------------

    def _refuse_link(self, relative: str) -> InvalidArtifactId:
        return InvalidArtifactId(
            f"refusing store path {relative!r}: it is a symlink, and the store never "
            "follows links that could lead outside it"
        )

    def _dir(self, *parts: str) -> str:
        """A directory under the root, refusing it if any of its components is a symlink.

        Every part is a fixed name, a validated id or two hex digits (no separators, no
        '..'), so with no component a link the path cannot lead outside the root; one
        ``lstat`` per component checks that, and files inside are then opened with
        ``O_NOFOLLOW`` (see :meth:`_open`), so a link planted as the file is refused too.
        A missing component raises FileNotFoundError.
        """
        path = self._top
        for depth, part in enumerate(parts, 1):
            path = f"{path}/{part}"
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise self._refuse_link("/".join(parts[:depth]))
        return path

    def _open(self, directory: str, relative: str, flags: int, mode: int = 0o644) -> int:
        """Open a file of ``directory`` without following a link planted in its place.

        ``relative`` is the file's store path, for the refusal message: a link is refused
        like a linked directory, not followed and not reported as an OS error.
        """
        try:
            return os.open(f"{directory}/{relative.rsplit('/', 1)[-1]}", flags | _NOFOLLOW, mode)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise self._refuse_link(relative) from None
            raise

    def _ensure_dir(self, *parts: str) -> str:
        """The directory, created one level at a time (each checked for links as it goes).

        A directory this store created is fsynced into its parent, so a blob or history
        fsynced inside it cannot vanish with its directory on power loss. Directories seen
        before are only re-checked (one ``lstat`` each), and re-made if someone removed them.
        """
        if parts in self._made:
            with contextlib.suppress(FileNotFoundError):
                return self._dir(*parts)
            self._made.discard(parts)
        if not os.path.isdir(self._top):
            self._root.mkdir(parents=True, exist_ok=True)
            _fsync_dir(os.fspath(self._root.parent))
        path = self._top
        for depth, part in enumerate(parts, 1):
            parent, path = path, f"{path}/{part}"
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path)
                mode = os.lstat(path).st_mode
                _fsync_dir(parent)
            if stat.S_ISLNK(mode):
                raise self._refuse_link("/".join(parts[:depth]))
        self._made.add(parts)
        return path

    @staticmethod
    def _blob_parts(sha256: str) -> tuple[str, str, str]:
        if _SHA_PATTERN.fullmatch(sha256) is None:
            raise IntegrityError(f"invalid sha256 {sha256!r}: expected 64 lower-case hex digits")
        return "blobs", sha256[:2], sha256

    def _blob_name(self, sha256: str) -> str:
        return f"blobs/{sha256[:2]}/{sha256}"

    # -- blobs -----------------------------------------------------------------------

    def _write_blob(self, sha256: str, content: bytes) -> None:
        """Write bytes once; a blob already there is kept unless its bytes were damaged."""
        parts = self._blob_parts(sha256)
        directory = self._ensure_dir(*parts[:2])
        if not self._matches_in(directory, sha256):
            _atomic_write(directory, sha256, content)

    def _fetch_blob(self, session: object, sha256: str) -> bytes | None:
        parts = self._blob_parts(sha256)
        try:
            return _read_fd(self._open(self._dir(*parts[:2]), "/".join(parts), os.O_RDONLY))
        except FileNotFoundError:
            return None

    def _blob_matches(self, session: object, sha256: str) -> bool | None:
        """Whether the blob hashes to its name (None: there is none), read only if changed.

        A blob hashed before and unchanged since by its ``fstat`` is not read again (see
        ``app.storage.file_digests``).
        """
        try:
            return self._matches_in(self._dir(*self._blob_parts(sha256)[:2]), sha256)
        except FileNotFoundError:
            return None

    def _matches_in(self, directory: str, sha256: str) -> bool | None:
        try:
            fd = self._open(directory, self._blob_name(sha256), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            before = os.fstat(fd)
            return (
                self._digests.sha256(fd, before, lambda: _read_open(fd, before.st_size)) == sha256
            )
        finally:
            os.close(fd)


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
            raw = _read_fd(self._open(self._dir("refs"), f"refs/{name}", os.O_RDONLY))
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
        _atomic_write(directory, name, payload.encode() + b"\n", sync_dir=not self._in_batch)

    # -- batches -----------------------------------------------------------------------

    def sync(self) -> None:
        """Fsync every history directory a batched put left pending (any thread's).

        Held under a lock so that a caller never returns while another thread is still
        syncing a directory it took off the pending set.
        """
        with self._sync_lock:
            while self._unsynced:
                directory = min(self._unsynced)
                _fsync_dir(directory)
                self._unsynced.discard(directory)

    @contextlib.contextmanager
    def _locked(self, artifact_id: str) -> Iterator[None]:
        """Serialise read-modify-write of one history across threads and processes."""
        relative = f"locks/{artifact_id}.lock"
        fd = self._open(self._ensure_dir("locks"), relative, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
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
        self._write_blob(sha256, content)
        with self._locked(artifact_id):
            history = self._load_history(None, artifact_id)
            head = history[-1] if history else None
            ref = next_revision(first, head.kind if head else None, head)
            if ref is not head:
                self._save_history(artifact_id, [*history, ref])
            if self._in_batch:
                # Even an unchanged head is synced at the end of the batch: its history may
                # have been written by a batch (here or in another process) not synced yet.
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
