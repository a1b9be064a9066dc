"""Wiring: the RunContext (store, agents, clock) a run gets, built from settings."""

from __future__ import annotations

from app.agents import OfflineResearchAgent, OfflineReviewerAgent, OfflineWriterAgent
from app.artifacts import FilesystemArtifactStore
from app.settings import Settings
from graphs import RunContext
from graphs.context import utc_now


def build_context(settings: Settings) -> RunContext:
    """The default, offline, deterministic services for a run."""
    clock = utc_now
    return RunContext(
        store=FilesystemArtifactStore(settings.resolved_artifact_dir()),
        research=OfflineResearchAgent(default_corpus=list(settings.corpus), clock=clock),
        writer=OfflineWriterAgent(),
        reviewer=OfflineReviewerAgent(),
        clock=clock,
    )
