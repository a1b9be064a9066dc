"""Model selection: HANDOFF_MODEL and per-agent overrides, resolved by init_chat_model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from app import agents
from app.agents.models import INSTALL, ModelConfigError, chat_model_for, check_spec
from app.agents.selection import agent_nodes, select_agents
from app.settings import PROJECT_ROOT, Settings
from graphs import WIRING
from graphs.context import utc_now
from graphs.errors import ExitCode
from tests.app.agents.scripted import scripted
from tests.cli import handoff, one_line_error


@pytest.fixture
def init_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Replace LangChain's init_chat_model with one returning fake models."""
    import langchain.chat_models

    calls: list[tuple[str, str]] = []

    def fake_init(model: str, *, model_provider: str, **kwargs: Any) -> object:
        calls.append((model_provider, model))
        return _fake()

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", fake_init)
    return calls


def _fake() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage

    return FakeMessagesListChatModel(responses=[AIMessage("{}")])


def test_offline_is_the_default_and_means_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HANDOFF_MODEL", "HANDOFF_AGENT_MODELS"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.model == "offline"
    assert [settings.model_for(role) for role in ("research", "writer", "reviewer")] == [
        "offline"
    ] * 3
    assert chat_model_for("offline") is None and chat_model_for(" OFFLINE ") is None
    selected = select_agents(settings, utc_now)
    research, writer, reviewer = selected["research"], selected["writer"], selected["reviewer"]
    assert isinstance(research, agents.OfflineResearchAgent)
    assert isinstance(writer, agents.OfflineWriterAgent)
    assert isinstance(reviewer, agents.OfflineReviewerAgent)


AGENT_NODES = agent_nodes(spec for spec, _ in WIRING)
"""The nodes that call an agent, each of which gets a model unless set offline."""


def test_environment_selects_a_model_and_per_agent_overrides(
    monkeypatch: pytest.MonkeyPatch, init_calls: list[tuple[str, str]]
) -> None:
    monkeypatch.setenv("HANDOFF_MODEL", "anthropic:claude-sonnet-4-5")
    monkeypatch.setenv(
        "HANDOFF_AGENT_MODELS", '{"research": "ollama:llama3.1:8b", "reviewer": "offline"}'
    )
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.model_for("research") == "ollama:llama3.1:8b"
    assert settings.model_for("writer") == "anthropic:claude-sonnet-4-5"
    selected = select_agents(settings, utc_now)
    research, writer, reviewer = selected["research"], selected["writer"], selected["reviewer"]
    assert isinstance(research, agents.LLMResearchAgent)
    assert isinstance(research.retrieval, agents.OfflineResearchAgent), "retrieval stays BM25"
    assert isinstance(writer, agents.LLMWriterAgent)
    assert isinstance(reviewer, agents.OfflineReviewerAgent)
    others = len(AGENT_NODES) - 2  # the writer, and any agent node a project adds
    assert sorted(init_calls) == sorted(
        [("ollama", "llama3.1:8b"), *[("anthropic", "claude-sonnet-4-5")] * others]
    ), "one model per agent node that has one: research's own, the default for the rest"


def test_models_given_directly_override_settings(
    monkeypatch: pytest.MonkeyPatch, init_calls: list[tuple[str, str]]
) -> None:
    monkeypatch.delenv("HANDOFF_AGENT_MODELS", raising=False)
    settings = Settings(_env_file=None, model="openai:gpt-4.1-mini")  # type: ignore[call-arg]
    fake, _ = scripted()
    selected = select_agents(settings, utc_now, {"reviewer": fake})
    research, writer, reviewer = selected["research"], selected["writer"], selected["reviewer"]
    assert isinstance(reviewer, agents.LLMReviewerAgent) and reviewer.model is fake
    assert isinstance(research, agents.LLMResearchAgent)
    assert isinstance(writer, agents.LLMWriterAgent)
    assert init_calls == [("openai", "gpt-4.1-mini")] * (len(AGENT_NODES) - 1)


@pytest.mark.parametrize("spec", ["gpt-4.1-mini", "openai:", ":gpt", "Open AI:gpt", ""])
def test_malformed_specs_are_refused_naming_the_format(spec: str) -> None:
    with pytest.raises(ModelConfigError, match="use 'offline' or provider:model"):
        check_spec(spec)
    with pytest.raises(ValidationError, match="provider:model"):
        Settings(_env_file=None, agent_models={"writer": spec or " "})  # type: ignore[call-arg]


def test_a_model_override_for_a_node_that_has_no_agent_is_refused_naming_the_nodes() -> None:
    settings = Settings(_env_file=None, agent_models={"writre": "offline"})  # type: ignore[call-arg]
    with pytest.raises(ModelConfigError, match=r"no agent node named \['writre'\].*'writer'"):
        select_agents(settings, utc_now)


def test_a_missing_provider_package_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import langchain.chat_models

    def missing(model: str, *, model_provider: str, **kwargs: Any) -> object:
        raise ImportError(f"Unable to import langchain_{model_provider}")

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", missing)
    with pytest.raises(ModelConfigError, match=r'pip install -e "\.\[openai\]"'):
        chat_model_for("openai:gpt-4.1-mini")
    with pytest.raises(ModelConfigError, match="install langchain-mistralai"):
        chat_model_for("mistralai:mistral-large-latest")


def test_an_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="nosuchprovider"):
        chat_model_for("nosuchprovider:some-model")


def test_a_provider_client_that_refuses_its_configuration_is_one_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import langchain.chat_models

    class OpenAIError(Exception):
        """What the provider's SDK raises when its client has no API key."""

    def refused(model: str, *, model_provider: str, **kwargs: Any) -> object:
        raise OpenAIError("The api_key client option must be set\neither by passing api_key")

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", refused)
    with pytest.raises(ModelConfigError) as raised:
        chat_model_for("openai:gpt-4.1-mini")
    message = str(raised.value)
    assert "\n" not in message
    assert "OpenAIError: The api_key client option must be set" in message
    assert raised.value.exit_code == ExitCode.USAGE
    assert isinstance(raised.value.__cause__, OpenAIError), "--debug shows the provider's error"


def test_the_install_command_a_model_error_gives_is_the_one_the_docs_give() -> None:
    models_page = (PROJECT_ROOT / "docs" / "models.md").read_text()
    assert INSTALL.format(extra="openai") in models_page


@pytest.mark.e2e
def test_a_model_that_cannot_be_set_up_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {"HANDOFF_MODEL": "openai:gpt-4.1-mini"}
    failed = handoff("run", "Explain the Rosetta Stone", data_dir=tmp_path, env=env)
    assert failed.returncode == ExitCode.USAGE
    line = one_line_error(failed)
    assert "openai:gpt-4.1-mini" in line and INSTALL.format(extra="openai") in line
    debugged = handoff("--debug", "run", "Explain the Rosetta Stone", data_dir=tmp_path, env=env)
    assert debugged.returncode == ExitCode.USAGE and "Traceback" in debugged.stderr
