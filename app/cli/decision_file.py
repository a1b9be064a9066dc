"""A decision file read as a JSON object, or one line saying why it is not a decision.

Every way a file can fail (missing, a folder, unreadable, too large, not UTF-8, not JSON,
nested absurdly deep, not an object) ends before any thread is touched, with exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.cli.input_files import InputFileError, read_input_file
from graphs.errors import UsageError


class DecisionInputError(UsageError):
    """Options that do not make one decision: two actions, a bad decision file, and so on."""


MAX_DECISION_FILE_BYTES = 1 << 20
"""A decision is a few fields of prose; anything larger is not one (and is never parsed)."""
MAX_DECISION_DEPTH = 8
"""Deepest nesting a HumanDecision has is 3 (answers → answer → text); refuse far deeper."""


def short(value: str, limit: int = 80) -> str:
    """A value quoted on one line, cut to ``limit`` characters, for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in parsed JSON (without recursing in Python)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number"}
    return "null" if value is None else names.get(type(value), "a number")


def read_decision_file(path: Path) -> dict[str, Any]:
    """The JSON object in a decision file, or DecisionInputError naming what is wrong.

    Every way a file can fail to be a decision (missing, a folder, unreadable, too large,
    not UTF-8, not JSON, nested absurdly deep, not an object) ends as one line and exit
    code 2, before any thread is touched.
    """
    where = f"decision file {short(str(path), 200)}"
    try:
        data = read_input_file(path, where, MAX_DECISION_FILE_BYTES)
    except InputFileError as error:
        raise DecisionInputError(error.message) from None
    if len(data) > MAX_DECISION_FILE_BYTES:
        raise DecisionInputError(
            f"{where}: larger than {MAX_DECISION_FILE_BYTES} bytes; a decision is a few fields"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DecisionInputError(
            f"{where}: not UTF-8 text (invalid byte at offset {error.start})"
        ) from None
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise DecisionInputError(
            f"{where}: not JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except RecursionError:
        raise DecisionInputError(
            f"{where}: nested deeper than {MAX_DECISION_DEPTH} levels; not a HumanDecision"
        ) from None
    except ValueError as error:  # e.g. an integer longer than Python converts
        raise DecisionInputError(f"{where}: not usable JSON ({short(str(error))})") from None
    if not isinstance(parsed, dict):
        raise DecisionInputError(
            f"{where}: expected a JSON object (a HumanDecision), got {_json_type(parsed)}"
        )
    if _depth(parsed) > MAX_DECISION_DEPTH:
        raise DecisionInputError(
            f"{where}: nested deeper than {MAX_DECISION_DEPTH} levels; not a HumanDecision"
        )
    return parsed
