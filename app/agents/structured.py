"""Structured output from a chat model: JSON into a pydantic schema, one repair, metered.

``ask`` sends a prompt with plain ``model.invoke`` (so any chat model works, and fake models
can script the raw text), parses the reply with ``model_validate_json`` and, when the reply
does not validate, sends one repair prompt holding only the schema, the validation errors
and the invalid reply. Still invalid: ``InvalidAgentOutput``, a ContractViolation, which the
node runner records as ``invalid_output`` (and handles: one fresh attempt, then an
INVALID_OUTPUT outcome). Every call's tokens are counted, repairs included.

Given the step's toolbox, the model is first offered the node's declared tools
(``app/agents/tool_talk.py``): its tool calls are answered through the boundary and it is
asked again, a few rounds at most, before its reply is parsed as above.

Token budget: no call starts once this step has used ``tokens_left`` (the thread's budget
left when the step began). A call in flight cannot be cut short, so a step can overrun the
budget by the one reply that crossed it; the agent then still returns its result with the
tokens it spent, and the workflow's budget check before the next node ends the run with
BUDGET_EXHAUSTED. If the budget is spent between an invalid reply and its repair, the
repair is skipped and the reply is reported invalid (the detail says why).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from app.agents import prompts
from app.agents.tool_talk import MAX_TOOL_ROUNDS, ToolTalk
from app.tracing import model_call
from contracts import Usage
from graphs import StepInfo
from graphs.boundary import describe_validation_error
from graphs.budget import estimated_tokens
from graphs.errors import ContractViolation, TransientError
from graphs.tools import Toolbox, ToolResult

S = TypeVar("S", bound=BaseModel)

MAX_DETAIL_CHARS = 1200
"""Longest validation summary put into an error (error contracts cap their detail)."""
MAX_REPAIRS = 1
"""Repair prompts per step after an invalid reply."""
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(.*?)\n?```$", re.DOTALL)
_TRANSIENT_NAMES = (
    "Timeout",
    "RateLimit",
    "Connection",
    "ConnectError",
    "Unavailable",
    "Overloaded",
    "InternalServerError",
)
"""Exception class names (of any provider SDK) that mean "try again later"."""


class InvalidAgentOutput(ContractViolation):
    """A model's reply did not fit its schema, even after the repair attempt.

    A ContractViolation, so the node runner records the attempt as ``invalid_output``.
    ``usage`` is what the step spent before giving up.
    """

    def __init__(
        self, message: str, *, node: str, channel: str, fields: list[str], usage: Usage
    ) -> None:
        super().__init__(message, node=node, channel=channel, fields=fields)
        self.usage = usage


@dataclass
class Reply(Generic[S]):
    """A validated reply and what getting it cost."""

    value: S
    tokens: int
    calls: int
    consulted: list[ToolResult] = field(default_factory=list)
    """The tool calls the model made before it answered, answered or refused."""


def ask(
    model: BaseChatModel,
    prompt: list[BaseMessage],
    schema: type[S],
    *,
    node: str,
    channel: str,
    tokens_left: int | None,
    repairs: int = MAX_REPAIRS,
    tools: Toolbox | None = None,
) -> Reply[S]:
    """Ask for a reply validating as ``schema``; repair at most ``repairs`` times.

    With ``tools``, the model may call them first (``app/agents/tool_talk.py``): each round
    of calls is answered through the boundary and the model asked again, within its tokens.
    """
    tokens = 0
    calls = 0
    repaired = 0
    messages = prompt
    talk = ToolTalk.offer(model, tools)

    def invalid(why: str, fields: list[str]) -> InvalidAgentOutput:
        """The step's reply is unusable; it spent the tokens counted so far."""
        usage = Usage(tokens=tokens)
        return InvalidAgentOutput(
            f"{node}: {why}", node=node, channel=channel, fields=fields, usage=usage
        )

    while True:
        if tokens_left is not None and tokens >= tokens_left:
            what = "a repair" if repaired else "the model"
            spent = f"({tokens} used of the {tokens_left} this step had)"
            raise invalid(f"no tokens left to ask {what} {spent}", ["budget.max_tokens"])
        asking = talk.bound if talk is not None and not repaired else model
        response = _invoke(asking, messages, node, model_name(model))
        calls += 1
        text = str(response.text)
        tokens += tokens_of(response, messages)
        if talk is not None and response.tool_calls and not repaired:
            if talk.rounds >= MAX_TOOL_ROUNDS:
                rounds = f"after {MAX_TOOL_ROUNDS} rounds of calls instead of answering"
                raise invalid(f"the model still called tools {rounds}", ["tool_calls"])
            messages = talk.answer(messages, response)
            continue
        try:
            value = schema.model_validate_json(json_text(text))
        except ValidationError as error:
            errors = describe_validation_error(error)
            if repaired >= repairs:
                why = f"the model's reply is not a valid {schema.__name__} after {repaired} "
                fields = [_location(item["loc"]) for item in error.errors()] or [channel]
                raise invalid(f"{why}repair(s): {_clip(errors)}", fields) from error
            repaired += 1
            messages = prompts.repair_prompt(schema, errors, text)
            continue
        consulted = talk.results if talk is not None else []
        return Reply(value=value, tokens=tokens, calls=calls, consulted=consulted)


def tokens_of(response: AIMessage, prompt: list[BaseMessage]) -> int:
    """Tokens one call used: the model's usage metadata, else a character estimate.

    The estimate is the attempt's meter's too (``graphs.declare.ModelUsage``), which marks it.
    """
    usage = response.usage_metadata
    if usage:
        total = usage.get("total_tokens") or usage.get("input_tokens", 0) + usage.get(
            "output_tokens", 0
        )
        return int(total)
    return estimated_tokens(prompts.size(prompt) + len(str(response.text)))


def json_text(text: str) -> str:
    """The JSON in a reply: the text itself, a fenced block's body, or the outer {...}."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    if not stripped.startswith("{"):
        start, end = stripped.find("{"), stripped.rfind("}")
        if 0 <= start < end:
            return stripped[start : end + 1]
    return stripped


def is_transient(error: BaseException) -> bool:
    """Whether a model call's failure may pass on retry (timeouts, rate limits, 5xx)."""
    if isinstance(error, TimeoutError | ConnectionError):
        return True
    return any(part in cls.__name__ for cls in type(error).__mro__ for part in _TRANSIENT_NAMES)


def _invoke(
    model: Runnable[Any, Any], messages: list[BaseMessage], node: str, name: str
) -> AIMessage:
    """One model call, in a span of its own when the attempt is traced (``name``: the model's)."""
    traced = model_call(name)
    try:
        response = model.invoke(messages)
    except Exception as error:
        if traced is not None:
            traced.failed(error)
        if is_transient(error):
            raise TransientError(
                f"{node}: model call failed: {type(error).__name__}: {error}"
            ) from error
        raise
    if not isinstance(response, AIMessage):
        wrong = TypeError(
            f"{node}: the chat model returned {type(response).__name__}, not AIMessage"
        )
        if traced is not None:
            traced.failed(wrong)
        raise wrong
    if traced is not None:
        usage = response.usage_metadata
        traced.answered(
            usage.get("input_tokens") if usage else None,
            usage.get("output_tokens") if usage else None,
        )
    return response


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 1] + "…"


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(reply)"


def model_name(model: BaseChatModel) -> str:
    """The model's name as its provider knows it, for the audit (its class if none)."""
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


@dataclass
class ModelBacked:
    """Base of the agents that ask a chat model: the audit names the model too.

    A dataclass, so the model is the first field of every model-backed agent.
    """

    model: BaseChatModel

    def describe(self) -> str:
        """The implementation and its model, as the audit names it."""
        return f"{type(self).__name__}({model_name(self.model)})"

    def ask_model(
        self,
        prompt: list[BaseMessage],
        schema: type[S],
        step: StepInfo,
        channel: str,
        tools: Toolbox | None = None,
    ) -> Reply[S]:
        """``ask`` this agent's model for the channel its step writes, within its tokens.

        ``tools``: the step's toolbox, whose tools the model may call before it answers.
        """
        return ask(
            self.model,
            prompt,
            schema,
            node=step.node,
            channel=channel,
            tokens_left=step.tokens_left,
            tools=tools,
        )
