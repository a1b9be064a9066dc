"""Wiring: the RunContext (store, agents, clock) a run gets, built from settings."""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.language_models import BaseChatModel

from app.agents.selection import select_agents
from app.corpus.probe import FileSourceProbe
from app.faults.points import NodeRunning, with_faults
from app.faults.rules import parse_faults
from app.mcp import mcp_export, with_mcp_tools
from app.settings import Settings
from app.storage.backends import artifact_store_for, ledger_for_url
from app.storage.encryption import key_ring
from app.tools import ArticleExport
from app.tracing import run_trace
from graphs import WIRING, ArtifactStore, RunContext, RunLedger, Wiring
from graphs.context import provided, untracked, utc_now
from graphs.tools.export import EXPORT_ARTICLE


def wiring_for(settings: Settings, wiring: Wiring = WIRING) -> Wiring:
    """``wiring`` with the MCP tools the settings give its nodes (``app/mcp.py``)."""
    return with_mcp_tools(wiring, settings.mcp_servers, settings.mcp_tools)


def build_context(
    settings: Settings,
    ledger: RunLedger | None = None,
    *,
    models: Mapping[str, BaseChatModel] | None = None,
    store: ArtifactStore | None = None,
    wiring: Wiring = WIRING,
    node_running: NodeRunning = untracked,
) -> RunContext:
    """The services for a run: offline, deterministic agents unless a model is configured.

    ``models`` gives agents a chat model directly (e.g. a fake one in tests), overriding
    ``settings.model`` for those nodes. ``store`` shares an open artifact store (the
    Workflow's); by default the one the settings name is opened on first use. ``wiring``
    is the graph's nodes: fault rules and model overrides are checked against them, and
    each node that declares an agent gets one. ``node_running`` is what the caller holds
    while a node runs (the dev server's count). Fault rules (``settings.fault``) wrap the
    finished services, so they see every node the caller's hold sees. Spans are made
    only when the ``OTEL_*`` environment configures a trace exporter (``app/tracing.py``).
    """
    clock = utc_now
    nodes = [spec for spec, _ in wiring]
    faults = parse_faults(settings.fault, nodes)
    agents = select_agents(settings, clock, models, nodes)
    export = mcp_export(settings.mcp_servers, settings.mcp_tools)  # or the export folder
    context = RunContext(
        ledger=ledger or ledger_for_url(settings.resolved_database_url(), key_ring(settings)),
        sources=FileSourceProbe(settings.corpus_policy()),
        store=store if store is not None else artifact_store_for(settings),
        agents=agents,
        tools={
            EXPORT_ARTICLE.name: export or ArticleExport(settings.resolved_export_dir()),
            **{
                name: code
                for spec in nodes
                if spec.name in agents
                for name, code in provided(agents[spec.name], [t.name for t in spec.tools]).items()
            },
        },
        clock=clock,
        node_running=node_running,
        trace=run_trace(),
    )
    return context if faults is None else with_faults(context, faults)
