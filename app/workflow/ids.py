"""Thread ids: the safe alphabet every id is checked against, and fresh ones."""

from __future__ import annotations

import re
import uuid

from app.errors import (
    InvalidThreadId,
)

_THREAD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def check_thread_id(thread_id: str) -> str:
    """Thread ids become part of artifact ids, so they are kept to a safe alphabet."""
    if not _THREAD_ID.match(thread_id):
        raise InvalidThreadId(
            f"invalid thread id {thread_id!r}: use 1-64 letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return thread_id


def new_thread_id() -> str:
    """A fresh, collision-resistant thread id."""
    return f"t-{uuid.uuid4().hex[:16]}"
