"""Wiring: the RunContext (store, agents, clock) a run gets, built from settings."""

from __future__ import annotations

from collections.abc import Mapping

from langchain_core.language_models import BaseChatModel

from app.backends import artifact_store_for, ledger_for_url
from app.faults import parse_faults
from app.models import Role, select_agents
from app.settings import Settings
from app.source_probe import FileSourceProbe
from graphs import ArtifactStore, RunContext, RunLedger
from graphs.context import no_fault, utc_now


def build_context(
    settings: Settings,
    ledger: RunLedger | None = None,
    *,
    models: Mapping[Role, BaseChatModel] | None = None,
    store: ArtifactStore | None = None,
) -> RunContext:
    """The services for a run: offline, deterministic agents unless a model is configured.

    ``models`` gives agents a chat model directly (e.g. a fake one in tests), overriding
    ``settings.model`` for those roles. ``store`` shares an open artifact store (the
    Workflow's); by default the one the settings name is opened on first use.
    """
    clock = utc_now
    fault = parse_faults(settings.fault)
    research, writer, reviewer = select_agents(settings, clock, models)
    return RunContext(
        fault=fault if fault is not None else no_fault,
        ledger=ledger or ledger_for_url(settings.resolved_database_url()),
        sources=FileSourceProbe(),
        store=store if store is not None else artifact_store_for(settings),
        research=research,
        writer=writer,
        reviewer=reviewer,
        clock=clock,
    )
