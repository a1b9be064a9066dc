"""The code of the ``export_article`` write tool: the article's bytes, into a file.

Idempotent by what it writes: a file that already holds exactly these bytes is left as it
is, so a confirmed call run again after a crash (between the write and its record in the
ledger) changes nothing. A new file appears whole or not at all (``files.atomic_write``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from app.storage.artifacts import files
from contracts import ExportArticleInput, ExportArticleOutput
from graphs.tools import ToolEnv


@dataclass(frozen=True)
class ArticleExport:
    """Writes articles into ``folder`` (made on first use)."""

    folder: Path

    def target(self, args: ExportArticleInput) -> Path:
        """The file a call writes: what a person confirms."""
        return self.folder / args.file_name

    def __call__(self, args: ExportArticleInput, env: ToolEnv) -> ExportArticleOutput:
        """Write the article's bytes to ``folder/file_name`` unless they are there already."""
        data = env.store.get(args.article)
        digest = hashlib.sha256(data).hexdigest()
        target = self.target(args)
        if not _holds(target, digest):
            self.folder.mkdir(parents=True, exist_ok=True)
            files.atomic_write(str(self.folder), args.file_name, data)
        return ExportArticleOutput(path=str(target), sha256=digest)


def _holds(path: Path, digest: str) -> bool:
    """Whether ``path`` is a file holding exactly the bytes hashed as ``digest``."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except FileNotFoundError:
        return False
