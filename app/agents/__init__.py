"""Agents: bounded workers behind the graph's agent protocols."""

from app.agents.research import OfflineResearchAgent
from app.agents.reviewer import OfflineReviewerAgent
from app.agents.writer import OfflineWriterAgent

__all__ = ["OfflineResearchAgent", "OfflineReviewerAgent", "OfflineWriterAgent"]
