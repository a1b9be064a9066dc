"""Content-addressed blobs in a folder, shared by the filesystem and SQLite artifact stores.

``blobs/<sha[:2]>/<sha>`` holds the bytes, named by their sha256 and written once. Paths are
checked with one ``lstat`` per directory and ``O_NOFOLLOW`` opens: no link is followed, so
nothing outside the root is read or written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from app.storage.artifacts import files
from app.storage.encryption import KeyRing, open_blob, seal_blob
from app.storage.file_digests import DIGESTS, FileDigests
from graphs.errors import IntegrityError, InvalidArtifactId

_SHA_PATTERN = re.compile(r"[0-9a-f]{64}")


class FolderBlobs:
    """Content-addressed blobs in a folder: written once, fsynced, never read through a link.

    Nothing is touched until the first write, so constructing one for a path that is only
    ever read (or never used) leaves the filesystem as it was. The stores that keep their
    blobs in a folder add where their revision histories live.
    """

    modified_where = "on disk"
    """Where damaged bytes were changed, for messages."""

    keys: KeyRing | None = None
    """Blobs are sealed under these keys (``app.storage.encryption``); None: kept as given.

    A blob's name stays the sha256 of its plain bytes, and every check hashes what it opens
    to, so a changed sealed blob is reported as any damaged blob is.
    """

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
            return os.open(
                f"{directory}/{relative.rsplit('/', 1)[-1]}", flags | files.NOFOLLOW, mode
            )
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
            files.fsync(os.fspath(self._root.parent))
        path = self._top
        for depth, part in enumerate(parts, 1):
            parent, path = path, f"{path}/{part}"
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path)
                mode = os.lstat(path).st_mode
                files.fsync(parent)
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
            files.atomic_write(directory, sha256, seal_blob(self.keys, content))

    def _has_blob(self, sha256: str) -> bool:
        """Whether a file stands under the blob's name (not read, so not verified)."""
        parts = self._blob_parts(sha256)
        try:
            os.lstat(f"{self._dir(*parts[:2])}/{sha256}")
        except FileNotFoundError:
            return False
        return True

    def _delete_blobs(self, sha256s: Iterable[str]) -> set[str]:
        """Remove these blobs' files; the ones that were there.

        Not fsynced: a removal a power loss undoes leaves a blob nothing names, never a
        name without its blob.
        """
        removed: set[str] = set()
        for sha256 in sha256s:
            parts = self._blob_parts(sha256)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self._dir(*parts[:2])}/{sha256}")
                removed.add(sha256)
        return removed

    def _fetch_blob(self, session: object, sha256: str) -> bytes | None:
        parts = self._blob_parts(sha256)
        try:
            stored = files.read_fd(self._open(self._dir(*parts[:2]), "/".join(parts), os.O_RDONLY))
        except FileNotFoundError:
            return None
        return open_blob(self.keys, stored)

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
        """Whether the blob in ``directory`` hashes to its name (None: there is none).

        A regular file whose ``lstat`` is one its digest was remembered for is that
        digest's file (``app.storage.file_digests``): told without opening it. Anything
        else (a link planted as the blob included) goes through the refusing open.
        """
        try:
            info = os.lstat(f"{directory}/{sha256}")
        except FileNotFoundError:
            return None
        if stat.S_ISREG(info.st_mode) and self._digests.known(info) == sha256:
            return True
        try:
            fd = self._open(directory, self._blob_name(sha256), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            before = os.fstat(fd)
            return (
                self._digests.sha256(
                    fd, before, lambda: open_blob(self.keys, files.read_open(fd, before.st_size))
                )
                == sha256
            )
        finally:
            os.close(fd)
