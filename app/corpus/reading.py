"""Finding and reading corpus documents, only where the settings allow; each read has a receipt.

Whoever starts a run names its corpus: the CLI's user, but also any client of the dev
server. So every path is resolved (symlinks followed) and must land inside one of the
corpus roots; only regular files are opened (never a device, FIFO or folder), a file over
the size limit is refused before it is read, a corpus of more documents than the file-count
limit is refused before any is read, and no read takes more than the size limit plus one
byte or runs past the time limit. A source re-read later to check it is unchanged
(``app/corpus/probe.py``) goes through the same rules.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import shlex
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.storage.file_digests import DIGESTS, FileDigests
from app.text.documents import HTML, MARKDOWN, PLAIN, RST
from graphs.errors import SourceRefused

CORPUS_SUFFIXES = {".md": MARKDOWN, ".txt": PLAIN, ".rst": RST, ".html": HTML, ".htm": HTML}
"""The documents a corpus holds, by file suffix: each read as its media type says."""
SUFFIXES = "/".join(CORPUS_SUFFIXES)
"""The suffixes as messages name them: ``.md/.txt/.rst/.html/.htm``."""
READ_CHUNK = 1 << 20
"""Bytes read per call: the time limit is checked between chunks."""
_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_NONBLOCK  # opening a FIFO must not wait for a writer
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_NOFOLLOW", 0)  # the path is resolved already: a new link is a swap
    | getattr(os, "O_CLOEXEC", 0)
)
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


_O_PATH = getattr(os, "O_PATH", 0)


def real_path(path: Path | str) -> str:
    """What ``os.path.realpath`` gives, asked of the kernel where it can answer.

    An ``O_PATH`` descriptor names the file the kernel reached, links followed, without
    opening it for reading (no device is opened, no FIFO waits); ``/proc/self/fd`` then
    spells its path. That is three calls where ``realpath`` makes one ``lstat`` per
    component. A path that cannot be opened so (missing, a link loop, no ``/proc``, not
    Linux) is resolved by ``realpath``, as before.
    """
    return _resolve(path)[0]


def _resolve(path: Path | str) -> tuple[str, OSError | None]:
    """``real_path``, and why the path leads to no file (missing, a link loop), if it does.

    The reason comes from the failed ``O_PATH`` open, or, where that is not available, from
    a strict ``realpath``: either way only a path that already failed costs a second call.
    """
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError as error:
            return os.path.realpath(path), error
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = ""
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real, None
    try:
        return os.path.realpath(path, strict=True), None
    except OSError as error:
        return os.path.realpath(path), error


DEFAULT_MAX_FILES = 2_000
"""Most documents one corpus may hold (``HANDOFF_CORPUS_MAX_FILES``).

Each document read becomes a source in the research bundle, and the bundle is part of
every later checkpoint of the thread: 10,000 small files made each SQLite checkpoint
8.5 MB and the run 35 s (``bench/p7_big_corpus.py``). 2,000 keeps a run within seconds
and a checkpoint under 2 MB while covering a large documentation tree.
"""


class CorpusNotFound(FileNotFoundError):
    """A corpus location that does not exist or holds no readable documents."""


@dataclass(frozen=True)
class CorpusPolicy:
    """Where corpus files may be, and how much of one may be read, how fast.

    ``roots`` are resolved folders; build it with ``Settings.corpus_policy()``.
    """

    roots: tuple[Path, ...]
    max_bytes: int
    read_seconds: float
    max_files: int = DEFAULT_MAX_FILES
    """Most documents a corpus may hold; more is refused before any is read."""
    configured: tuple[Path, ...] = ()
    """The roots as ``HANDOFF_CORPUS_ROOTS`` sets them, for the hint that adds one."""
    digests: FileDigests = field(default=DIGESTS, compare=False, repr=False)
    """Digests of files hashed before (see :meth:`sha256`)."""

    @functools.cached_property
    def _prefixes(self) -> tuple[tuple[str, str], ...]:
        """Each root as a string and as the prefix of what lies below it."""
        return tuple((str(root), str(root).rstrip("/") + "/") for root in self.roots)

    def describe_roots(self) -> str:
        """The roots, for error messages."""
        return ", ".join(str(root) for root in self.roots)

    def roots_with(self, path: Path) -> str:
        """The ``HANDOFF_CORPUS_ROOTS`` setting that would admit ``path`` too."""
        folder = path if path.is_dir() else path.parent
        roots = dict.fromkeys(str(root) for root in (*self.configured, folder))
        return "HANDOFF_CORPUS_ROOTS=" + shlex.quote(os.pathsep.join(roots))

    def admit(self, path: Path, what: str) -> Path:
        """The resolved path, if it is inside a root; refused otherwise.

        Checked before the path is opened or its kind looked at. A link loop (or a chain of
        links too long to follow) is refused inside the roots: no file is behind it. A
        missing path inside the roots is returned, for the caller to treat as gone.
        """
        return self._admitted(path, what, must_exist=False)

    def admit_location(self, path: Path) -> Path:
        """A corpus location a task names, resolved: admitted as by :meth:`admit`, and there.

        A location that leads to nothing is refused as missing, wherever it would be:
        saying it is outside the roots, and how to allow it, would send the task's author
        after the wrong fix.
        """
        return self._admitted(path, "corpus path", must_exist=True)

    def _admitted(self, path: Path, what: str, *, must_exist: bool) -> Path:
        try:
            real, unreachable = _resolve(path)
        except (OSError, RuntimeError, ValueError) as error:  # ValueError: a NUL byte
            raise SourceRefused(f"{what} {path} cannot be resolved: {error}") from error
        if must_exist and isinstance(unreachable, FileNotFoundError | NotADirectoryError):
            raise SourceRefused(
                f"{what} {path} does not exist; name an existing folder or {SUFFIXES} file"
            )
        if any(real == root or real.startswith(prefix) for root, prefix in self._prefixes):
            if unreachable is not None and unreachable.errno == errno.ELOOP:
                raise SourceRefused(
                    f"{what} {path} is a symlink loop (or a chain of too many links): "
                    "no file is behind it; only regular files are read"
                )
            return Path(real)
        resolved = Path(real)
        shown = str(path) if resolved == path.absolute() else f"{path} (resolves to {resolved})"
        raise SourceRefused(
            f"{what} {shown} is outside the corpus roots ({self.describe_roots()}); "
            f"to allow it, add its folder to the roots: {self.roots_with(resolved)}"
        )

    def check_file(self, what: str, path: Path, info: os.stat_result) -> None:
        """Refuse anything but a regular file within the size limit (``info``: its stat)."""
        kind = next((kind for test, kind in _KINDS if test(info.st_mode)), "not a regular file")
        if not stat.S_ISREG(info.st_mode):
            raise SourceRefused(f"{what} {path} is {kind}; only regular files are read")
        if info.st_size > self.max_bytes:
            raise SourceRefused(
                f"{what} {path} is {info.st_size:,} bytes, over the limit of "
                f"{self.max_bytes:,} (HANDOFF_CORPUS_MAX_BYTES)"
            )

    def check_count(self, count: int, locations: list[Path]) -> None:
        """Refuse a corpus once ``count`` documents found exceed the limit.

        Called as documents are found, so a huge tree is refused after ``max_files + 1``
        of them, not after walking all of it; nothing has been read by then.
        """
        if count > self.max_files:
            shown = ", ".join(str(location) for location in locations)
            raise SourceRefused(
                f"corpus {shown} holds more than {self.max_files:,} documents ({SUFFIXES}), "
                f"the limit (HANDOFF_CORPUS_MAX_FILES); nothing was read: name a smaller "
                "folder, or raise the limit"
            )

    def read(self, path: Path, what: str = "source") -> bytes:
        """The bytes of a regular file inside the roots: at most the limit, within the time.

        Raises SourceRefused for what the rules refuse, OSError when the file is gone or
        unreadable.
        """
        fd, _ = self._open(path, what)
        try:
            return self._read_fd(fd, path, what)
        finally:
            os.close(fd)

    def sha256(self, path: Path) -> str:
        """The file's sha256 now, under the same rules; read only if it changed since.

        A file hashed before, and not changed since by its ``fstat`` (see
        ``app.storage.file_digests``), is not read again; nor opened, when the ``lstat``
        of its resolved path is one its digest was remembered for (a link put there since
        is not a regular file, and goes through the refusing open).
        """
        real = self.admit(path, "source")
        try:
            info: os.stat_result | None = os.lstat(real)
        except OSError:
            info = None  # the open below says why
        if info is not None and stat.S_ISREG(info.st_mode):
            known = self.digests.known(info)
            if known is not None:
                self.check_file("source", path, info)
                return known
        fd, before = self._open_admitted(real, path, "source")
        try:
            return self.digests.sha256(fd, before, lambda: self._read_fd(fd, path, "source"))
        finally:
            os.close(fd)

    def _open(self, path: Path, what: str) -> tuple[int, os.stat_result]:
        """A descriptor of the admitted file, and its stat: a file the rules allow reading."""
        return self._open_admitted(self.admit(path, what), path, what)

    def _open_admitted(self, real: str | Path, path: Path, what: str) -> tuple[int, os.stat_result]:
        """:meth:`_open` of a path :meth:`admit` resolved to ``real``."""
        fd = os.open(real, _OPEN_FLAGS)
        try:
            info = os.fstat(fd)
            self.check_file(what, path, info)
        except BaseException:
            os.close(fd)
            raise
        return fd, info

    def _read_fd(self, fd: int, path: Path, what: str) -> bytes:
        """Every byte of an open file: at most the limit, within the time."""
        deadline = time.monotonic() + self.read_seconds
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(READ_CHUNK, self.max_bytes + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > self.max_bytes:
                raise SourceRefused(
                    f"{what} {path} grew past the limit of {self.max_bytes:,} bytes while "
                    "it was read (HANDOFF_CORPUS_MAX_BYTES)"
                )
            if time.monotonic() > deadline:
                raise SourceRefused(
                    f"reading {what} {path} took over {self.read_seconds:g} s "
                    "(HANDOFF_CORPUS_READ_SECONDS)"
                )
        return b"".join(chunks)


def decode(data: bytes, path: Path) -> str:
    """A document's text; bytes that are not UTF-8 are an error naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SourceRefused(
            f"{path} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from error


def sha256_of(data: bytes) -> str:
    """Hex sha256, the hash every source and artifact is pinned by."""
    return hashlib.sha256(data).hexdigest()
