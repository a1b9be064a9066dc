"""Histories the filesystem store kept as ``refs/<id>.json``, brought into an SQLite store.

A store made before histories lived in the database imports them the first time it is
used, inside one write transaction: a history already imported is skipped if identical
and refused if it differs. A crash between the commit and the rename of the folder
imports the same rows again next time, which the first rule makes harmless.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from app.storage.artifacts import files
from app.storage.artifacts.filesystem import FilesystemArtifactStore
from contracts import ArtifactRef
from graphs.errors import IntegrityError

LEGACY_REFS = "refs"
"""Where the filesystem store kept histories; imported, then renamed to ``refs.imported``."""


def legacy_histories(root: Path) -> Iterator[tuple[str, list[ArtifactRef]]]:
    """Each artifact id of the ``refs`` folder under ``root``, with its history."""
    legacy = FilesystemArtifactStore(root)
    for artifact_id in legacy.ids():
        yield artifact_id, legacy.history(artifact_id)


def unrecorded(
    artifact_id: str,
    history: list[ArtifactRef],
    recorded: list[ArtifactRef],
    *,
    root: Path,
    database: Path,
) -> list[ArtifactRef]:
    """The revisions of ``history`` the database lacks; IntegrityError if it records others."""
    if recorded == history[: len(recorded)] and len(recorded) <= len(history):
        return history[len(recorded) :]
    raise IntegrityError(
        f"cannot import the history of artifact {artifact_id!r} from "
        f"{root / LEGACY_REFS / (artifact_id + '.json')}: the database {database} already "
        f"records a different one ({len(recorded)} revisions); nothing was imported"
    )


def retire_legacy_refs(root: Path) -> None:
    """Rename the imported ``refs`` folder out of the way, durably (another name if taken)."""
    refs = root / LEGACY_REFS
    with contextlib.suppress(FileNotFoundError):
        try:
            os.rename(refs, root / f"{LEGACY_REFS}.imported")
        except OSError as error:
            if error.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            os.rename(refs, root / f"{LEGACY_REFS}.imported-{os.getpid()}")
        files.fsync(os.fspath(root))
