"""Which files were hashed already, so a freshness check does not re-read unchanged bytes.

Before each consumer the freshness check re-hashes every source and blob a handoff pins,
and almost always nothing has changed since the last check. A file's device, inode, size,
modification and change times move whenever its bytes do, with one gap: two writes within
one tick of the filesystem's clock can leave the same times (git calls such files "racily
clean"). So a digest is remembered only for a file whose last change was at least
``settle_ns`` before the read that hashed it began: a later write then stamps a change
time after that read, which no remembered entry has, and the file is read again. The
change time cannot be set from user space (``touch -d`` or ``os.utime`` set the
modification time and stamp the change time with now), so tools that restore the old
modification time are still seen.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable

SETTLE_NS = 2_000_000_000
"""How long a file must be unchanged before its digest is remembered: two seconds, the
coarsest timestamps in common use (FAT); any clock tick of a local filesystem is finer."""
MAX_ENTRIES = 4096
"""Remembered digests; the memo starts over beyond that."""

Signature = tuple[int, int, int, int, int]


def signature(info: os.stat_result) -> Signature:
    """What changes whenever a file's bytes do (see the module docstring for the gap)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class FileDigests:
    """sha256 digests of files, keyed by their :func:`signature`; safe across threads."""

    def __init__(self, *, settle_ns: int = SETTLE_NS, max_entries: int = MAX_ENTRIES) -> None:
        self.settle_ns = settle_ns
        self.max_entries = max_entries
        self._digests: dict[Signature, str] = {}
        self._lock = threading.Lock()

    def known(self, info: os.stat_result) -> str | None:
        """The digest of the file ``info`` describes, if it was hashed in this state before."""
        return self._digests.get(signature(info))

    def sha256(self, fd: int, before: os.stat_result, read: Callable[[], bytes]) -> str:
        """The sha256 of the open file ``fd`` (``before``: its ``fstat``), read only if unknown.

        ``read`` reads it (under the caller's rules); the digest is then remembered if it
        may be (see :meth:`remember`).
        """
        known = self.known(before)
        if known is not None:
            return known
        started = time.time_ns()  # before reading: what remember compares the file's times to
        digest = hashlib.sha256(read()).hexdigest()
        self.remember(before, os.fstat(fd), digest, started)
        return digest

    def remember(
        self, before: os.stat_result, after: os.stat_result, digest: str, started: int
    ) -> None:
        """Keep ``digest`` for a file read between two ``fstat`` calls, from ``started`` on.

        Nothing is kept for a file that changed while it was read, or whose last change is
        too recent for a later one to be told apart by its times.
        """
        key = signature(before)
        if key != signature(after):
            return
        if max(before.st_mtime_ns, before.st_ctime_ns) > started - self.settle_ns:
            return
        with self._lock:
            if len(self._digests) >= self.max_entries:
                self._digests.clear()
            self._digests[key] = digest


DIGESTS = FileDigests()
"""The process's memo, shared by the corpus reader and the folder blob stores."""
