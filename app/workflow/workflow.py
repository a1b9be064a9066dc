"""The Python API's one class: every way in (CLI, worker fleet, scripts) drives it."""

from __future__ import annotations

from app.workflow.artifacts import ArtifactAccess
from app.workflow.revising import Revising


class Workflow(Revising, ArtifactAccess):
    """The workflow with its checkpointer and services; use as a context manager.

    ``Workflow(settings)`` reads locations from settings; ``database_url`` and
    ``artifact_dir`` override them for one instance (tests, scripts). ``wiring`` is the
    graph's nodes and routers (``graphs.WIRING``, or an extended copy). ``read_only``
    opens the storage for inspection only (status, history, artifacts, threads): nothing
    is set up or written, so it works on a full disk; running or editing needs a
    Workflow that is not read-only. ``guard`` is asked before a thread is run, resumed or
    cancelled (``app.workflow.guard``): the worker fleet's ``fleet_workflow`` passes the
    queue's, so a thread with an unfinished job is left to it.

    Reading a thread is :class:`~app.workflow.reading.ThreadReading`'s, its artifacts
    :class:`~app.workflow.artifacts.ArtifactAccess`'s, moving it
    :class:`~app.workflow.running.Running`'s, changing its task
    :class:`~app.workflow.revising.Revising`'s; storage is opened by
    :class:`~app.workflow.base.OpenWorkflow`.
    """
