"""Structured output: JSON into a schema, one repair fed by the errors, metered tokens."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, Field

from app.agents.structured import InvalidAgentOutput, ask, is_transient, json_text, tokens_of
from graphs.errors import ContractViolation, TransientError
from tests.app.agents.scripted import reply, scripted

PROMPT = [HumanMessage("Name the stone. SECRET-CONTEXT")]


class Answer(BaseModel):
    name: str = Field(min_length=3)
    year: int


def _ask(model: object, tokens_left: int | None = None) -> object:
    return ask(model, PROMPT, Answer, node="writer", channel="draft", tokens_left=tokens_left)  # type: ignore[arg-type]


def test_a_valid_reply_is_parsed_with_its_tokens() -> None:
    model, log = scripted(reply({"name": "Rosetta", "year": 1799}, tokens=42))
    result = _ask(model)
    assert result.value == Answer(name="Rosetta", year=1799)  # type: ignore[attr-defined]
    assert (result.tokens, result.calls) == (42, 1)  # type: ignore[attr-defined]
    assert len(log.prompts) == 1


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"name": "Rosetta", "year": 1799}\n```',
        'Here you go: {"name": "Rosetta", "year": 1799} Hope it helps.',
        '  {"name": "Rosetta", "year": 1799}\n',
    ],
)
def test_json_is_taken_from_fences_and_surrounding_prose(text: str) -> None:
    assert Answer.model_validate_json(json_text(text)).year == 1799


def test_an_invalid_reply_is_repaired_with_schema_errors_and_the_reply_only() -> None:
    model, log = scripted(
        reply({"name": "R", "year": "late"}, tokens=30), reply({"name": "Rosetta", "year": 1799})
    )
    result = _ask(model)
    assert (result.tokens, result.calls) == (130, 2)  # type: ignore[attr-defined]
    repair = log.texts()[1]
    assert "name: String should have at least 3 characters" in repair
    assert "year: Input should be a valid integer" in repair
    assert '{"name": "R", "year": "late"}' in repair
    assert '"required":["name","year"]' in repair, "the schema is restated"
    assert "SECRET-CONTEXT" not in repair, "no transcript of the first prompt"


def test_invalid_twice_raises_invalid_output_with_the_tokens_spent() -> None:
    model, log = scripted(reply("not json", tokens=10), reply('{"name": "Rosetta"}', tokens=20))
    with pytest.raises(InvalidAgentOutput) as caught:
        _ask(model)
    error = caught.value
    assert isinstance(error, ContractViolation), "the node runner treats it as invalid_output"
    assert error.usage.tokens == 30 and error.channel == "draft"
    assert error.fields == ["year"]
    assert "after 1 repair(s): year: Field required" in error.message
    assert len(log.prompts) == 2


def test_no_call_starts_without_tokens_left() -> None:
    model, log = scripted(reply({"name": "Rosetta", "year": 1799}))
    with pytest.raises(InvalidAgentOutput, match="no tokens left to ask the model"):
        _ask(model, tokens_left=0)
    assert log.prompts == []


def test_a_repair_is_skipped_when_the_first_reply_spent_the_budget() -> None:
    model, log = scripted(reply("oops", tokens=80), reply({"name": "Rosetta", "year": 1799}))
    with pytest.raises(InvalidAgentOutput, match="no tokens left to ask a repair") as caught:
        _ask(model, tokens_left=50)
    assert caught.value.usage.tokens == 80 and caught.value.fields == ["budget.max_tokens"]
    assert len(log.prompts) == 1


def test_a_reply_that_overruns_the_budget_is_still_used() -> None:
    model, _ = scripted(reply({"name": "Rosetta", "year": 1799}, tokens=500))
    assert _ask(model, tokens_left=100).tokens == 500  # type: ignore[attr-defined]


def test_usage_without_metadata_is_estimated_from_characters() -> None:
    assert tokens_of(AIMessage("x" * 40), [HumanMessage("y" * 60)]) == 25
    with_usage = AIMessage(
        "x", usage_metadata={"input_tokens": 7, "output_tokens": 5, "total_tokens": 12}
    )
    assert tokens_of(with_usage, PROMPT) == 12


class RateLimitError(Exception):
    """Named like a provider SDK's rate-limit error."""


class AuthenticationError(Exception):
    """Named like a provider SDK's auth error: not transient."""


def test_provider_timeouts_and_rate_limits_are_transient_other_errors_are_not() -> None:
    assert is_transient(RateLimitError("429")) and is_transient(TimeoutError())
    assert not is_transient(AuthenticationError("bad key")) and not is_transient(KeyError())


def test_a_rate_limited_call_raises_transient_for_the_node_runner_to_retry() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    class Limited(FakeListChatModel):
        def _call(self, *args: object, **kwargs: object) -> str:
            raise RateLimitError("429 slow down")

    with pytest.raises(TransientError, match="RateLimitError: 429 slow down"):
        _ask(Limited(responses=["{}"]))
