"""How each action of a pause is given on the command line, derived from its declaration."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime

from rich.console import Console

from app.cli.invocation import command
from contracts import HumanRequest
from graphs import WIRING
from graphs.pauses import Action, Pause
from graphs.wiring import pauses_of

PAUSES: dict[str, Pause] = pauses_of(WIRING)
"""The pauses of the workflow the command line drives, by kind (derived from its wiring)."""


ACTION_FLAGS = ("approve", "reject", "accept_partial", "grant_round", "abort")
"""Actions with a flag of their own; every other action is given as ``--action NAME``."""
IMPLIED = "revise"
"""The action ``--answer`` and ``--constraint`` mean when no action is named."""


def action_names(pauses: Mapping[str, Pause]) -> tuple[str, ...]:
    """Every action the pauses declare, in declaration order (``--action`` takes these)."""
    return tuple(dict.fromkeys(name for pause in pauses.values() for name in pause.names))


ACTIONS: tuple[str, ...] = action_names(PAUSES)


def flag(name: str) -> str:
    """The command-line flag of an action or option name (``grant_round``: ``--grant-round``)."""
    return "--" + name.replace("_", "-")


def option(action: str) -> str:
    """The option that chooses ``action``: its own flag, or ``--action NAME``."""
    return flag(action) if action in ACTION_FLAGS else f"--action {action}"


def detail_fields(pause: Pause, action: Action) -> list[str]:
    """The fields of the action's details contract a decision must give (all, if none must)."""
    contract = pause.details_contract(action.name)
    if contract is None:
        return []
    fields = contract.model_fields
    required = [name for name, field in fields.items() if field.is_required()]
    return required or list(fields)


def _field_hint(field: str, pause: Pause, action: Action) -> str:
    """How one decision field is given on the command line."""
    if field == "reason":
        return '--reason "…"'
    if field == "answers":
        return "--answer QID=TEXT"
    if field == "constraints":
        return "--constraint TEXT"
    return " ".join(f"--detail {name}=JSON" for name in detail_fields(pause, action))


def action_hint(action: Action, pause: Pause, request: HumanRequest | None = None) -> str:
    """How to give ``action`` of ``pause`` on the command line, from its declaration alone.

    A new action needs no entry here: it is ``--action NAME`` until it gets a flag, with
    one option for each field it needs (``--reason``, ``--detail NAME=JSON``, …). Given the
    ``request``, answers are offered only while it has a question left to answer.
    """
    if action.name == IMPLIED:
        waiting = request is None or any(q.answer is None for q in request.open_questions)
        takes = [f for f in action.takes if f != "answers" or waiting]
        return " / ".join(_field_hint(field, pause, action) for field in [*takes, *action.needs])
    return " ".join(
        [option(action.name), *(_field_hint(field, pause, action) for field in action.needs)]
    )


def request_hints(request: HumanRequest, pauses: Mapping[str, Pause] = PAUSES) -> list[str]:
    """The options that answer ``request``, one per action it allows, from its pause."""
    pause = pauses.get(request.request_kind)
    return [
        action_hint(pause.action(name), pause, request)
        if pause is not None and name in pause.names
        else option(name)
        for name in request.allowed_actions
    ]


def render_request(
    request: HumanRequest, thread_id: str, console: Console, pauses: Mapping[str, Pause] = PAUSES
) -> None:
    """Show the question, the evidence and how to answer, on any console."""
    console.print(f"waiting for a human decision: {request.interrupt_id}", markup=False)
    console.print(f"  {request.question}", markup=False)
    if request.fact_count or request.source_count:
        console.print(
            f"  evidence: {request.fact_count} facts from {request.source_count} sources",
            markup=False,
        )
    for fact in request.top_facts:
        console.print(f"    [{fact.claim_id}] ({fact.confidence}) {fact.claim}", markup=False)
    for question in request.open_questions:
        state = f"answered: {question.answer}" if question.answer else "open"
        console.print(f"  {question.id}: {question.text} ({state})", markup=False)
    for name, value in (request.details or {}).items():
        console.print(f"  {name}: {json.dumps(value, ensure_ascii=False)}", markup=False)
    if request.expires_at is not None:
        pause = pauses.get(request.request_kind)
        default = pause.on_expiry(request.allowed_actions).name if pause else "its default"
        when = f"{request.expires_at:%Y-%m-%d %H:%M:%S} UTC"
        line = (
            f"  expired at {when}: the next resume or sweep records {default}"
            if datetime.now(UTC) >= request.expires_at
            else f"  expires at {when}; unanswered by then, the request takes {default}"
        )
        console.print(line, markup=False)
    console.print("answer with:", markup=False)
    for hint in request_hints(request, pauses):
        console.print(f"  {command()} resume {thread_id} {hint}", markup=False)
    console.print(
        f"  or: {command()} resume {thread_id} --decision-file decision.json", markup=False
    )
