"""A file named on the command line, read whole, or one line saying why it cannot be.

A missing file, a folder, or one the user may not read is the user's to correct: a usage
error (exit code 2) naming the file, before any thread is touched.
"""

from __future__ import annotations

from pathlib import Path

from graphs.errors import UsageError


class InputFileError(UsageError):
    """A file named by an option that cannot be read; nothing was changed."""


def read_input_file(path: Path, what: str, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit`` + 1 of them), or InputFileError naming it.

    ``what`` names the file in the error, e.g. ``"decision file '…'"``.
    """
    try:
        with path.open("rb") as handle:
            return handle.read(-1 if limit is None else limit + 1)
    except FileNotFoundError:
        raise InputFileError(f"{what}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{what}: is a directory, expected a file") from None
    except OSError as error:
        raise InputFileError(f"{what}: cannot be read ({error.strerror})") from None
