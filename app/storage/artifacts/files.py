"""How the folder stores write and read a file: atomically, durably, never through a link.

Callers reach these through the module (``files.fsync``), so there is one place where
a directory is fsynced.
"""

from __future__ import annotations

import contextlib
import os
import secrets

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def fsync(path: str | os.PathLike[str]) -> None:
    """Make what was written to ``path`` durable: a file's bytes, or a folder's new entries.

    A rename is durable only once its directory is synced too. The path is opened
    read-only and closed at once: nothing else this process holds open on it is touched.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(directory: str, name: str, content: bytes, *, sync_dir: bool = True) -> None:
    """Readers see the old file or the new one; a crash leaves at most a stray temp file.

    The bytes are fsynced before the rename, so a file it replaces is never seen
    half-written, even after a power loss; the directory is fsynced after it (unless the
    caller does that later, for several files at once) so the new name survives one too.
    The temp name is random and opened ``O_EXCL | O_NOFOLLOW`` (what
    ``tempfile.mkstemp`` does, without its per-call setup).
    """
    tmp = f"{directory}/.{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
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
        fsync(directory)


def read_fd(fd: int) -> bytes:
    """Every byte of an open file, then closed (read in one call when it can be)."""
    try:
        return read_open(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def read_open(fd: int, size: int) -> bytes:
    """Every byte of an open file of about ``size`` bytes (read in one call when it can be)."""
    chunks = [os.read(fd, size + 1)]
    while chunks[-1]:  # a file that grew while it was read, or a short read
        chunks.append(os.read(fd, 1 << 20))
    return b"".join(chunks)
