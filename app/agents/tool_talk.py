"""A chat model calling its node's declared tools, through the node's tool boundary.

The model is offered the node's tools with LangChain's ``bind_tools`` (each as its name, the
first line of its input contract's docstring and that contract's JSON Schema). Every tool
call the model emits goes through the attempt's ``Toolbox``: a tool the node did not
declare, arguments its contract refuses, calls past its rate or the task's budget are
answered with the ``ToolError`` contract, never a stack trace, and every call is receipted.
The answers go back to the model as tool messages, and it is asked again.

A model is given a few rounds of calls (``MAX_TOOL_ROUNDS``); one still calling tools after
them has not answered, which the caller reports as an invalid reply, so a model's output
never becomes an unbounded run of commands. A model without tool calling
(``bind_tools`` not implemented) is asked without tools.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.runnables import Runnable

from graphs.tools import Toolbox, ToolResult, ToolSpec

MAX_TOOL_ROUNDS = 3
"""Replies of tool calls a model may make in one step before it must answer."""
_CALL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def tool_schema(spec: ToolSpec) -> dict[str, Any]:
    """What a model is told of a declared tool: its name, purpose and argument schema."""
    purpose = (spec.input.__doc__ or spec.name).strip().splitlines()[0]
    parameters = spec.input.model_json_schema()
    return {
        "type": "function",
        "function": {"name": spec.name, "description": purpose, "parameters": parameters},
    }


@dataclass
class ToolTalk:
    """The tools one step offers its model, and what the model's calls got."""

    tools: Toolbox
    bound: Runnable[Any, BaseMessage]
    rounds: int = 0
    results: list[ToolResult] = field(default_factory=list)
    """Every call the model made, answered or refused, in order."""

    @classmethod
    def offer(cls, model: BaseChatModel, tools: Toolbox | None) -> ToolTalk | None:
        """The talk, or None: no tools to offer, or a model without tool calling."""
        if tools is None or not tools.tools:
            return None
        try:
            bound = model.bind_tools([tool_schema(spec) for spec in tools.tools])
        except NotImplementedError:
            return None
        return cls(tools, bound)

    def answer(self, messages: list[BaseMessage], response: AIMessage) -> list[BaseMessage]:
        """``messages`` with the model's calls and each call's answer, after the boundary."""
        self.rounds += 1
        answers: list[BaseMessage] = []
        for call in response.tool_calls:
            result = self.tools.call(
                call["name"], call["args"], call_id=self._call_id(call), by_model=True
            )
            self.results.append(result)
            answers.append(
                ToolMessage(
                    content=_content(result),
                    tool_call_id=call["id"] or result.receipt.call_id,
                    name=call["name"],
                    status="error" if result.error is not None else "success",
                )
            )
        return [*messages, response, *answers]

    def _call_id(self, call: ToolCall) -> str:
        """The model's call id when it is a valid receipt id, else one of the step's own."""
        given = call.get("id") or ""
        return given if _CALL_ID.match(given) else f"model-call-{len(self.results) + 1}"


def _content(result: ToolResult) -> str:
    """What the model reads back: the output contract's JSON, its ref, or the error's."""
    if result.error is not None:
        return json.dumps({"error": result.error.model_dump(mode="json")})
    if result.ref is not None:
        return json.dumps({"artifact": result.ref.model_dump(mode="json")})
    return str(result.output.model_dump_json())
