"""The Workflow a way in opens for its settings: the fleet's on PostgreSQL, else a plain one.

On PostgreSQL a thread with an unfinished fleet job is left to its job
(``app.fleet.guard.fleet_workflow``); elsewhere no queue can exist, and the fleet is not
imported. The CLI and the A2A server open their Workflows here, so both leave the same
threads alone.
"""

from __future__ import annotations

from collections.abc import Iterator

from app.project_graphs import project_graphs
from app.settings import Settings
from app.storage.postgres import is_postgres_url
from app.workflow import Workflow


def open_workflow(
    settings: Settings | None = None,
    *,
    read_only: bool = False,
    graph: str | None = None,
    thread: str | None = None,
) -> Workflow:
    """The Workflow of ``settings`` (the environment's if None), read-only if asked.

    It runs ``graph`` (langgraph.json's id); without one, the graph that made ``thread``
    when one is named and exists, else the main graph. Given both, a thread of another
    graph is refused when it is read or moved (``WrongGraph``, naming both).
    """
    resolved = settings or Settings()
    workflow = _workflow(resolved, read_only, graph)
    if graph is not None or thread is None:
        return workflow
    try:
        recorded = workflow.graph_of(thread)
    except BaseException:
        workflow.close()
        raise
    if recorded is None or recorded == workflow.graph_id:
        return workflow
    workflow.close()
    return _workflow(resolved, read_only, recorded)


def each_graph(settings: Settings | None = None, *, read_only: bool = False) -> Iterator[Workflow]:
    """A Workflow of each graph langgraph.json declares, the main one first, each closed after.

    What works on every thread (a sweep, a prune) works on each graph's own: a graph's
    nodes read only the threads it made.
    """
    resolved = settings or Settings()
    for graph_id in project_graphs(resolved.graphs_config):
        with _workflow(resolved, read_only, graph_id) as workflow:
            yield workflow


def _workflow(settings: Settings, read_only: bool, graph: str | None) -> Workflow:
    if not is_postgres_url(settings.resolved_database_url()):
        return Workflow(settings, read_only=read_only, graph=graph)
    from app.fleet.guard import fleet_workflow

    return fleet_workflow(settings, read_only=read_only, graph=graph)
