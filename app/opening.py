"""The Workflow a way in opens for its settings: the fleet's on PostgreSQL, else a plain one.

On PostgreSQL a thread with an unfinished fleet job is left to its job
(``app.fleet.guard.fleet_workflow``); elsewhere no queue can exist, and the fleet is not
imported. The CLI and the A2A server open their Workflows here, so both leave the same
threads alone.
"""

from __future__ import annotations

from app.settings import Settings
from app.storage.postgres import is_postgres_url
from app.workflow import Workflow


def open_workflow(settings: Settings | None = None, *, read_only: bool = False) -> Workflow:
    """The Workflow of ``settings`` (the environment's if None), read-only if asked."""
    resolved = settings or Settings()
    if not is_postgres_url(resolved.resolved_database_url()):
        return Workflow(resolved, read_only=read_only)
    from app.fleet.guard import fleet_workflow

    return fleet_workflow(resolved, read_only=read_only)
