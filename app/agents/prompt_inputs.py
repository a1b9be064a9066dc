"""What a prompt shows of a request beyond its own layout, so a new input reaches the model.

A prompt lays out some request fields and constraints itself; every other state field and
constraint is rendered here under its description (the text its JSON Schema carries), so
a field added to a contract or a request needs no edit in the prompts.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

from contracts import Constraints
from graphs.agents import (
    CONTRIBUTED,
    ResearchRequest,
    ReviewRequest,
    WriteRequest,
    request_channels,
)

MAX_ITEM_CHARS = 300
"""Longest reason, note or decision text quoted into a prompt."""


def laid_out(request: type[object], *names: str) -> frozenset[str]:
    """The request fields a prompt lays out itself; a name the request lacks fails at import.

    Every other field the node fills from state is rendered by ``request_inputs``, so a
    new input reaches the model without an edit here.
    """
    channels = request_channels(request)
    unknown = sorted(set(names) - set(channels))
    if unknown:
        raise TypeError(f"{request.__name__} has no state fields {unknown}: {sorted(channels)}")
    return frozenset(names)


def request_inputs(request: object, shown: frozenset[str]) -> list[str]:
    """Every state field of the request the prompt does not lay out, with its descriptions.

    A contract is rendered field by field, each under its description (the same text its
    JSON Schema carries); empty fields are left out. What other nodes added for this agent
    to read (the request's ``inputs``, see ``read_by``) is rendered the same way.
    """
    lines: list[str] = []
    given = {name: getattr(request, name) for name in request_channels(type(request))}
    given |= dict(getattr(request, CONTRIBUTED, None) or {})
    for name, value in given.items():
        if name in shown or value is None:
            continue
        title = (type(value).__doc__ or name).strip().splitlines()[0]
        lines += ["", f"{name} ({line(title)}):"]
        if not isinstance(value, BaseModel):
            lines.append(f"- {clip(json.dumps(value, default=str))}")
            continue
        for field_name, info in type(value).model_fields.items():
            item = getattr(value, field_name)
            if field_name in ("schema_version", "kind") or item in (None, [], {}, ""):
                continue
            shown_value = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
            text = (
                shown_value
                if isinstance(shown_value, str)
                else json.dumps(shown_value, default=str, ensure_ascii=False)
            )
            lines.append(f"- {line(info.description or field_name)}: {clip(text)}")
    return lines


RESEARCH_LAYS_OUT = laid_out(ResearchRequest, "task")
"""What ``research_prompt`` shows of a ResearchRequest in its own layout."""
WRITER_LAYS_OUT = laid_out(WriteRequest, "task", "handoff", "bundle", "previous", "review")
"""What ``writer_prompt`` shows of a WriteRequest in its own layout."""
REVIEWER_LAYS_OUT = laid_out(ReviewRequest, "task", "handoff", "bundle", "draft")
"""What ``reviewer_prompt`` shows of a ReviewRequest in its own layout."""


CONSTRAINTS_LAID_OUT = frozenset({"max_words", "required_sections", "notes"})
"""The constraints ``constraint_lines`` words itself; any other field is shown under its
description, so a constraint added to the contract reaches the model with no edit here."""
if not CONSTRAINTS_LAID_OUT <= set(Constraints.model_fields):
    raise TypeError(
        f"Constraints has no {sorted(CONSTRAINTS_LAID_OUT - set(Constraints.model_fields))}"
    )


def constraint_lines(constraints: Constraints) -> list[str]:
    """The constraints in force, one line each; those not worded here under their description."""
    lines = ["Constraints:"]
    if constraints.max_words is not None:
        lines.append(f"- at most {constraints.max_words} words in the body")
    if constraints.required_sections:
        titles = "; ".join(line(title) for title in constraints.required_sections)
        lines.append(f"- required sections, as '## ' headings: {titles}")
    lines += [f"- note: {clip(note)}" for note in constraints.notes]
    for name, info in type(constraints).model_fields.items():
        value = getattr(constraints, name)
        if name in CONSTRAINTS_LAID_OUT or name in ("schema_version", "kind"):
            continue
        if value not in (None, [], {}, ""):
            shown = value if isinstance(value, str) else json.dumps(value, default=str)
            lines.append(f"- {line(info.description or name)}: {clip(shown)}")
    return lines if len(lines) > 1 else ["Constraints: none"]


def line(text: str) -> str:
    """Text on one line, runs of whitespace made one space."""
    return re.sub(r"\s+", " ", text).strip()


def clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    """Text on one line, cut to ``limit`` characters with an ellipsis."""
    flat = line(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
