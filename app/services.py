"""Wiring: the RunContext (store, agents, clock) a run gets, built from settings."""

from __future__ import annotations

from app.agents import OfflineResearchAgent, OfflineReviewerAgent, OfflineWriterAgent
from app.artifacts import FilesystemArtifactStore
from app.faults import parse_faults
from app.ledger import ledger_for_url
from app.settings import Settings
from graphs import RunContext, RunLedger
from graphs.context import no_fault, utc_now


def build_context(settings: Settings, ledger: RunLedger | None = None) -> RunContext:
    """The default, offline, deterministic services for a run."""
    clock = utc_now
    fault = parse_faults(settings.fault)
    return RunContext(
        fault=fault if fault is not None else no_fault,
        ledger=ledger or ledger_for_url(settings.resolved_database_url()),
        store=FilesystemArtifactStore(settings.resolved_artifact_dir()),
        research=OfflineResearchAgent(default_corpus=list(settings.corpus), clock=clock),
        writer=OfflineWriterAgent(),
        reviewer=OfflineReviewerAgent(),
        clock=clock,
    )
