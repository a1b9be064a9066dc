"""Agents: bounded workers behind the graph's agent protocols."""

from app.agents.llm_research import LLMResearchAgent
from app.agents.llm_reviewer import LLMReviewerAgent
from app.agents.llm_writer import LLMWriterAgent
from app.agents.research import OfflineResearchAgent
from app.agents.reviewer import OfflineReviewerAgent
from app.agents.structured import InvalidAgentOutput
from app.agents.writer import OfflineWriterAgent

__all__ = [
    "InvalidAgentOutput",
    "LLMResearchAgent",
    "LLMReviewerAgent",
    "LLMWriterAgent",
    "OfflineResearchAgent",
    "OfflineReviewerAgent",
    "OfflineWriterAgent",
]
