"""Scripted chat models for the model-backed agents: fake replies, recorded prompts.

langchain-core's FakeMessagesListChatModel returns the scripted AIMessages in order (with
their usage metadata); a callback records every prompt actually sent to it.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage

from app.agents.prompts import size


class PromptLog(BaseCallbackHandler):
    """Every prompt a chat model received, in order."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.prompts.extend(list(batch) for batch in messages)

    def texts(self) -> list[str]:
        return ["\n".join(str(message.text) for message in prompt) for prompt in self.prompts]

    def sizes(self) -> list[int]:
        return [size(prompt) for prompt in self.prompts]


def reply(payload: Any, tokens: int = 100) -> AIMessage:
    """A model reply: a JSON payload (or raw text) with usage metadata of ``tokens``."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    usage = {"input_tokens": tokens - tokens // 4, "output_tokens": tokens // 4}
    usage["total_tokens"] = tokens
    return AIMessage(text, usage_metadata=usage)  # type: ignore[arg-type]


def scripted(*replies: AIMessage) -> tuple[FakeMessagesListChatModel, PromptLog]:
    """A fake chat model answering with ``replies`` in order, and the log of its prompts."""
    log = PromptLog()
    return FakeMessagesListChatModel(responses=list(replies), callbacks=[log]), log


class ToolCallingFake(FakeMessagesListChatModel):
    """A scripted model that takes tools as a provider's would, and keeps what it was offered.

    langchain-core's fake chat models do not implement ``bind_tools``; the scripted replies
    carry the tool calls, so binding only has to record the tools and return the model.
    """

    offered: list[Any] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:  # type: ignore[override]
        self.offered = list(tools)
        return self


def scripted_with_tools(*replies: AIMessage) -> tuple[ToolCallingFake, PromptLog]:
    """``scripted``, by a model that can be offered tools."""
    log = PromptLog()
    return ToolCallingFake(responses=list(replies), callbacks=[log]), log


def calling(*calls: tuple[str, dict[str, Any]], tokens: int = 50) -> AIMessage:
    """A model reply that calls tools (name, arguments) instead of answering."""
    usage = {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens}
    tool_calls = [
        {"name": name, "args": args, "id": f"call_{number}", "type": "tool_call"}
        for number, (name, args) in enumerate(calls, start=1)
    ]
    return AIMessage("", tool_calls=tool_calls, usage_metadata=usage)  # type: ignore[arg-type]


# The bundled corpus, as the scripted models quote it.
STONE = {
    "claim": "The Rosetta Stone carries one decree in hieroglyphs, Demotic and Ancient Greek.",
    "source_id": "src-4",
    "quote": "The Rosetta Stone carries the same decree in three scripts, with Egyptian "
    "hieroglyphs at the top, Demotic in the middle and Ancient Greek at the bottom.",
}
LETTRE = {
    "claim": "Champollion announced his decipherment of Egyptian hieroglyphs in the "
    "Lettre à Monsieur Dacier of 1822.",
    "source_id": "src-3",
    "quote": "Champollion's decipherment of Egyptian hieroglyphs, announced in the Lettre "
    "à Monsieur Dacier of 1822",
}
YOUNG = {
    "claim": "Thomas Young showed that the decree on the Rosetta Stone could be used to match "
    "Egyptian signs with Greek words.",
    "source_id": "src-6",
    "quote": "Young's study of the Rosetta Stone showed that the decree of 196 BC in honor of "
    "Ptolemy V could be used to match Egyptian signs with Greek words.",
}
MOON = {
    "claim": "The Rosetta Stone was carried to the moon in 1850.",
    "source_id": "src-4",
    "quote": "The Rosetta Stone was carried to the moon in 1850.",
}
GROUNDED = (YOUNG, STONE, LETTRE)
"""The claims the bundled corpus quotes verbatim, in the order ARTICLE cites them."""
ARTICLE = """# The Rosetta Stone and the decipherment of hieroglyphs

Thomas Young showed that the decree on the Rosetta Stone could be used to match Egyptian \
signs with Greek words [claim-1].

## The Stone

The Rosetta Stone carries the same decree in hieroglyphs, Demotic and Ancient Greek [claim-2].

## Decipherment

Champollion announced the decipherment of Egyptian hieroglyphs in the Lettre à Monsieur \
Dacier of 1822 [claim-3].
"""
APPROVE = {"verdict": "approve", "changes": []}


def claims(*items: dict[str, str]) -> dict[str, Any]:
    return {"claims": list(items)}


def draft(markdown: str = ARTICLE) -> dict[str, str]:
    return {"markdown": markdown}


def critique(*reasons: str) -> dict[str, Any]:
    return {
        "verdict": "changes_requested",
        "changes": [{"code": "CONSTRAINT_VIOLATED", "reason": reason} for reason in reasons],
    }
