"""Which agent each node gets: the shipped implementation of its protocol, around a model.

Settings say which model a node uses (``app.agents.models`` reads the spec); this module
builds the agents from them, so the settings object can check model specs without
importing the agents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from app.agents.models import ModelConfigError, chat_model_for
from app.settings import Settings
from graphs import WIRING, NodeSpec, ResearchAgent, ReviewerAgent, WriterAgent

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from app.agents.parsed_documents import ParsedDocuments

Clock = Callable[[], datetime]
AgentFactory = Callable[["BaseChatModel | None", Settings, Clock], object]


def agent_nodes(nodes: Iterable[NodeSpec]) -> dict[str, type]:
    """Each node that calls an agent, with the agent protocol it declares."""
    return {spec.name: spec.agent for spec in nodes if spec.agent is not None}


def parsed_documents(settings: Settings) -> ParsedDocuments:
    """Where research keeps parsed corpus files: the data folder, sealed under its key."""
    from app.agents.parsed_documents import PARSED_FOLDER, ParsedDocuments
    from app.storage.encryption import key_ring

    return ParsedDocuments(settings.data_dir / PARSED_FOLDER, key_ring(settings))


def implementations() -> dict[type, AgentFactory]:
    """The shipped implementation of each agent protocol: offline, or around a chat model."""
    from app.agents import (
        LLMResearchAgent,
        LLMReviewerAgent,
        LLMWriterAgent,
        OfflineResearchAgent,
        OfflineReviewerAgent,
        OfflineWriterAgent,
    )

    def research(model: BaseChatModel | None, settings: Settings, clock: Clock) -> object:
        retrieval = OfflineResearchAgent(
            default_corpus=list(settings.corpus),
            clock=clock,
            policy=settings.corpus_policy(),
            parsed_documents=parsed_documents(settings),
        )
        return retrieval if model is None else LLMResearchAgent(model, retrieval)

    def writer(model: BaseChatModel | None, settings: Settings, clock: Clock) -> object:
        return OfflineWriterAgent() if model is None else LLMWriterAgent(model)

    def reviewer(model: BaseChatModel | None, settings: Settings, clock: Clock) -> object:
        return OfflineReviewerAgent() if model is None else LLMReviewerAgent(model)

    return {ResearchAgent: research, WriterAgent: writer, ReviewerAgent: reviewer}


def select_agents(
    settings: Settings,
    clock: Clock,
    models: Mapping[str, BaseChatModel] | None = None,
    nodes: Iterable[NodeSpec] | None = None,
) -> dict[str, object]:
    """The agent of every node that has one.

    Offline unless settings (or ``models``, e.g. fakes in tests, by node name) give the node
    a chat model.
    """
    given = dict(models or {})
    declared = agent_nodes(nodes if nodes is not None else (spec for spec, _ in WIRING))
    for source, names in (("models", given), ("HANDOFF_AGENT_MODELS", settings.agent_models)):
        unknown = sorted(set(names) - set(declared))
        if unknown:
            raise ModelConfigError(
                f"{source}: no agent node named {unknown}; agent nodes: {sorted(declared)}"
            )
    factories = implementations()
    agents: dict[str, object] = {}
    for name, protocol in declared.items():
        if protocol not in factories:
            raise ModelConfigError(
                f"node {name!r} needs a {protocol.__name__}, and no implementation is "
                "registered for it in app.agents.selection.implementations()"
            )
        model = given[name] if name in given else chat_model_for(settings.model_for(name))
        agents[name] = factories[protocol](model, settings, clock)
    return agents
