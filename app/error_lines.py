"""An error as every way in reports it: one line, naming the field, passwords masked."""

from __future__ import annotations

from pydantic import ValidationError

from app.settings import Settings
from app.storage.postgres import redact
from graphs.boundary import describe_validation_error
from graphs.errors import HandoffError


def error_line(error: BaseException) -> str:
    """An error in one line (the field, for a contract's), before masking."""
    if isinstance(error, ValidationError):
        return f"invalid {error.title}: {describe_validation_error(error)}"
    if isinstance(error, HandoffError):
        return error.message
    return str(error)


def redacted(text: str) -> str:
    """``text`` with the database passwords masked (a driver's error may quote its URL)."""
    try:
        url: str | None = Settings().resolved_database_url()
    except Exception:  # settings that do not load: mask what the patterns find
        url = None
    return redact(text, url)
