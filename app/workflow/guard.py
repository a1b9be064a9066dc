"""Another way into a thread that may hold it: the hook a Workflow is given, never looked up.

The Workflow runs, resumes and cancels threads; something beside it (the worker fleet's
queue, on PostgreSQL) may have promised a thread to someone else. Whoever opens the
Workflow over such a database hands it a guard; the Workflow asks it, holding the
thread's lock, before any write, and knows nothing of what stands behind it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from app.storage.backends import Backend


class WriteGuard(Protocol):
    """Refuses a write to a thread that another way in holds."""

    def refuse_if_held(self, backend: Backend, thread_id: str, consequence: str) -> None:
        """Raise (a ThreadBusy naming the holder, saying ``consequence``) if it is held.

        ``backend`` is the Workflow's open storage; the check may read through it.
        """
