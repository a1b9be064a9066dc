"""Model selection: ``offline`` (the deterministic agents) or a LangChain chat model.

A model spec is ``offline`` or ``provider:model`` (``openai:gpt-4.1-mini``,
``anthropic:claude-sonnet-4-5``, ``ollama:llama3.1``), resolved with LangChain's
``init_chat_model``. LangChain and the provider packages are optional extras
(``pip install 'handoff-workflow[openai]'``); the offline default needs neither.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from contracts import ErrorCode
from graphs import WIRING, NodeSpec, ResearchAgent, ReviewerAgent, WriterAgent
from graphs.errors import HandoffError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from app.settings import Settings

Clock = Callable[[], datetime]
AgentFactory = Callable[["BaseChatModel | None", "Settings", Clock], object]
OFFLINE = "offline"
_SPEC = re.compile(r"^(?P<provider>[a-z][a-z0-9_-]*):(?P<model>\S+)$")
EXTRAS = frozenset({"openai", "anthropic", "ollama"})
"""Providers this project has an install extra for; others need their package by name."""


class ModelConfigError(HandoffError, ValueError):
    """A model spec that is malformed, or names a provider that is not installed."""

    code = ErrorCode.INVALID_INPUT


def check_spec(spec: str) -> str:
    """The spec, normalised (``offline`` or ``provider:model``), or ModelConfigError."""
    value = spec.strip()
    if value.lower() == OFFLINE:
        return OFFLINE
    if not _SPEC.match(value):
        raise ModelConfigError(
            f"invalid model {spec!r}: use 'offline' or provider:model, "
            "e.g. openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:llama3.1"
        )
    return value


def chat_model_for(spec: str) -> BaseChatModel | None:
    """The chat model a spec names, or None for ``offline``."""
    value = check_spec(spec)
    if value == OFFLINE:
        return None
    match = _SPEC.match(value)
    assert match is not None
    provider, name = match.group("provider"), match.group("model")
    extra = provider if provider in EXTRAS else "llm"
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as error:
        raise ModelConfigError(
            f"model {value!r} needs LangChain: pip install 'handoff-workflow[{extra}]'"
        ) from error
    try:
        return init_chat_model(name, model_provider=provider)
    except ImportError as error:
        hint = (
            f"pip install 'handoff-workflow[{provider}]'"
            if provider in EXTRAS
            else f"install langchain-{provider.replace('_', '-')}"
        )
        raise ModelConfigError(f"model {value!r}: provider package missing ({hint})") from error
    except ValueError as error:
        raise ModelConfigError(f"model {value!r}: {error}") from error


def agent_nodes(nodes: Iterable[NodeSpec]) -> dict[str, type]:
    """Each node that calls an agent, with the agent protocol it declares."""
    return {spec.name: spec.agent for spec in nodes if spec.agent is not None}


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
            default_corpus=list(settings.corpus), clock=clock, policy=settings.corpus_policy()
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
                "registered for it in app.agents.models.implementations()"
            )
        model = given[name] if name in given else chat_model_for(settings.model_for(name))
        agents[name] = factories[protocol](model, settings, clock)
    return agents
