"""Message and artifact parts: what a client sent read as text and JSON, and what is sent back.

``google.protobuf.Value`` keeps every number as a double, so a whole number a client sent
as ``300`` arrives as ``300.0``; :func:`data_parts` gives such numbers back as ints, which
is what every contract field that takes a count expects.
"""

from __future__ import annotations

import hashlib
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.types import Message, Part, Role
from pydantic import BaseModel

JSON = "application/json"
MARKDOWN = "text/markdown"


def whole_numbers(value: Any) -> Any:
    """``value`` with every float that is a whole number made an int, at any depth."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value


def data_parts(message: Message) -> list[Any]:
    """The message's data parts as JSON values (whole numbers as ints)."""
    return [whole_numbers(value) for value in get_data_parts(message.parts)]


def text_of(message: Message) -> str:
    """The message's text parts, joined by newlines and stripped."""
    return "\n".join(get_text_parts(message.parts)).strip()


def contract_part(contract: BaseModel) -> Part:
    """A data part carrying a contract as its JSON (``kind`` and ``schema_version`` included)."""
    return new_data_part(contract.model_dump(mode="json"), media_type=JSON)


def json_part(value: Any) -> Part:
    """A data part carrying plain JSON (a JSON Schema, say)."""
    return new_data_part(value, media_type=JSON)


def agent_message(text: str, *extra: Part, task_id: str, context_id: str) -> Message:
    """A message from the agent: a line of text first, then any data parts."""
    parts = [new_text_part(text), *extra]
    content = b"".join(part.SerializeToString(deterministic=True) for part in parts)
    return Message(  # the id is the content's: a task read twice says the same message
        message_id=f"{task_id}-{hashlib.sha256(content).hexdigest()[:16]}",
        role=Role.ROLE_AGENT,
        task_id=task_id,
        context_id=context_id,
        parts=parts,
    )
