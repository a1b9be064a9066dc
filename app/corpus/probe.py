"""Re-hashing sources where they were read from, so edits on disk are detected.

A source's URI is thread state, and thread state can be changed from outside (the dev
server's ``update_state``), so a re-read obeys the corpus rules exactly as the first read
did: a URI now pointing outside the roots, at a device or FIFO, or at a file over the size
limit is refused (SourceRefused), never opened; no re-read can hang or fill memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from app.corpus.reading import CorpusPolicy


@dataclass(frozen=True)
class FileSourceProbe:
    """Sources read from ``file://`` URIs; other schemes are reported as gone."""

    policy: CorpusPolicy

    def current_sha256(self, uri: str) -> str | None:
        """The sha256 of the file now, or None if it no longer exists or cannot be read.

        Raises SourceRefused when the corpus rules forbid reading it.
        """
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            return None
        try:
            return self.policy.sha256(Path(unquote(parsed.path)))
        except OSError:
            return None
