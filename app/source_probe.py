"""Re-hashing sources where they were read from, so edits on disk are detected."""

from __future__ import annotations

import hashlib
from urllib.parse import unquote, urlparse


class FileSourceProbe:
    """Sources read from ``file://`` URIs; other schemes are reported as gone."""

    def current_sha256(self, uri: str) -> str | None:
        """The sha256 of the file now, or None if it no longer exists or cannot be read."""
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            return None
        try:
            with open(unquote(parsed.path), "rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError:
            return None
