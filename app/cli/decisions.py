"""Turning CLI flags, a decision file or an interactive prompt into a HumanDecision."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.prompt import Prompt

from app.cli.invocation import command
from app.workflow import check_decision, pause_of
from contracts import ErrorCode, HumanDecision, HumanRequest
from graphs import WIRING
from graphs.errors import ExitCode, HandoffError
from graphs.pauses import Action, Pause
from graphs.wiring import pauses_of

PAUSES: dict[str, Pause] = pauses_of(WIRING)
"""The pauses of the workflow the command line drives, by kind (derived from its wiring)."""


class DecisionInputError(HandoffError, ValueError):
    """Options that do not make one decision: two actions, a bad decision file, and so on."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


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
    console.print("answer with:", markup=False)
    for hint in request_hints(request, pauses):
        console.print(f"  {command()} resume {thread_id} {hint}", markup=False)
    console.print(
        f"  or: {command()} resume {thread_id} --decision-file decision.json", markup=False
    )


MAX_DECISION_FILE_BYTES = 1 << 20
"""A decision is a few fields of prose; anything larger is not one (and is never parsed)."""
MAX_DECISION_DEPTH = 8
"""Deepest nesting a HumanDecision has is 3 (answers → answer → text); refuse far deeper."""
_ACTION_FLAGS = ("approve", "reject", "accept_partial", "grant_round", "abort")
"""Actions with a flag of their own; every other action is given as ``--action NAME``."""
IMPLIED = "revise"
"""The action ``--answer`` and ``--constraint`` mean when no action is named."""


def action_names(pauses: Mapping[str, Pause]) -> tuple[str, ...]:
    """Every action the pauses declare, in declaration order (``--action`` takes these)."""
    return tuple(dict.fromkeys(name for pause in pauses.values() for name in pause.names))


ACTIONS: tuple[str, ...] = action_names(PAUSES)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _option(action: str) -> str:
    """The option that chooses ``action``: its own flag, or ``--action NAME``."""
    return _flag(action) if action in _ACTION_FLAGS else f"--action {action}"


def detail_fields(pause: Pause) -> list[str]:
    """The fields of the pause's decision contract a decision must give (all, if none must)."""
    if pause.decision is None:
        return []
    fields = pause.decision.model_fields
    required = [name for name, field in fields.items() if field.is_required()]
    return required or list(fields)


def _field_hint(field: str, pause: Pause) -> str:
    """How one decision field is given on the command line."""
    if field == "reason":
        return '--reason "…"'
    if field == "answers":
        return "--answer QID=TEXT"
    if field == "constraints":
        return "--constraint TEXT"
    return " ".join(f"--detail {name}=JSON" for name in detail_fields(pause))


def action_hint(action: Action, pause: Pause) -> str:
    """How to give ``action`` of ``pause`` on the command line, from its declaration alone.

    A new action needs no entry here: it is ``--action NAME`` until it gets a flag, with
    one option for each field it needs (``--reason``, ``--detail NAME=JSON``, …).
    """
    if action.name == IMPLIED:
        takes = [_field_hint(field, pause) for field in action.takes]
        return " / ".join([*takes, *(_field_hint(field, pause) for field in action.needs)])
    return " ".join([_option(action.name), *(_field_hint(field, pause) for field in action.needs)])


def request_hints(request: HumanRequest, pauses: Mapping[str, Pause] = PAUSES) -> list[str]:
    """The options that answer ``request``, one per action it allows, from its pause."""
    pause = pauses.get(request.request_kind)
    return [
        action_hint(pause.action(name), pause)
        if pause is not None and name in pause.names
        else _option(name)
        for name in request.allowed_actions
    ]


def _detail(item: str) -> tuple[str, Any]:
    """``NAME=VALUE`` from ``--detail``: the value as JSON when it parses, else as text."""
    name, sep, text = item.partition("=")
    if not sep or not name.strip():
        raise DecisionInputError(
            f"--detail expects NAME=VALUE (the value as JSON, or text), got {_short(item)}"
        )
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    return name.strip(), value


@dataclass(frozen=True)
class DecisionFlags:
    """The decision options of ``handoff resume``, as given on the command line."""

    approve: bool = False
    reject: bool = False
    accept_partial: bool = False
    grant_round: bool = False
    abort: bool = False
    action: str | None = None
    reason: str | None = None
    answers: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    decision_file: Path | None = None

    def given(self) -> list[str]:
        """The decision options used, as flags (empty: no decision was given)."""
        values = {
            "--approve": self.approve,
            "--reject": self.reject,
            "--accept-partial": self.accept_partial,
            "--grant-round": self.grant_round,
            "--abort": self.abort,
            "--action": self.action is not None,
            "--reason": self.reason is not None,
            "--answer": bool(self.answers),
            "--constraint": bool(self.constraints),
            "--detail": bool(self.details),
            "--decision-file": self.decision_file is not None,
        }
        return [flag for flag, used in values.items() if used]

    def raw(self, actions: tuple[str, ...] = ACTIONS) -> dict[str, Any] | None:
        """The decision the options describe, not yet tied to a request; None if none given.

        ``actions`` are the ones ``--action`` may name: every action the pauses declare.

        Everything the options alone can get wrong (a file that is not a decision, two
        actions, a file and flags together) is refused here, before any thread is opened.
        The result has no ``interrupt_id`` unless a decision file named one.
        """
        given = self.given()
        if self.decision_file is not None:
            if len(given) > 1:
                others = ", ".join(flag for flag in given if flag != "--decision-file")
                raise DecisionInputError(
                    f"--decision-file cannot be combined with {others}: the file is the decision"
                )
            return read_decision_file(self.decision_file)
        chosen = [name for name in _ACTION_FLAGS if getattr(self, name)]
        named = [_flag(name) for name in chosen]
        if self.action is not None:
            if self.action not in actions:
                raise DecisionInputError(
                    f"--action {_short(self.action)} is no action; expected one of "
                    f"{', '.join(actions)}"
                )
            chosen.append(self.action)
            named.append(f"--action {self.action}")
        if len(chosen) > 1:
            raise DecisionInputError(f"choose one action, not {' and '.join(named)}")
        if not given:
            return None
        if not chosen and not self.answers and not self.constraints:
            lonely = "--reason" if self.reason is not None else "--detail"
            raise DecisionInputError(
                f"{lonely} needs an action: one of "
                f"{', '.join(_option(name) for name in actions if name != IMPLIED)}"
            )
        parsed = []
        for item in self.answers:
            question_id, sep, text = item.partition("=")
            if not sep or not text.strip():
                raise DecisionInputError(f"--answer expects QID=TEXT, got {_short(item)}")
            parsed.append({"question_id": question_id.strip(), "text": text.strip()})
        decision: dict[str, Any] = {
            "action": chosen[0] if chosen else IMPLIED,
            "reason": self.reason,
            "answers": parsed,
            "constraints": list(self.constraints),
        }
        if self.details:
            decision["details"] = dict(_detail(item) for item in self.details)
        return decision


def _short(value: str, limit: int = 80) -> str:
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
    where = f"decision file {_short(str(path), 200)}"
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_DECISION_FILE_BYTES + 1)
    except FileNotFoundError:
        raise DecisionInputError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise DecisionInputError(f"{where}: is a directory, expected a JSON file") from None
    except OSError as error:
        raise DecisionInputError(f"{where}: cannot be read ({error.strerror})") from None
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
        raise DecisionInputError(f"{where}: not usable JSON ({_short(str(error))})") from None
    if not isinstance(parsed, dict):
        raise DecisionInputError(
            f"{where}: expected a JSON object (a HumanDecision), got {_json_type(parsed)}"
        )
    if _depth(parsed) > MAX_DECISION_DEPTH:
        raise DecisionInputError(
            f"{where}: nested deeper than {MAX_DECISION_DEPTH} levels; not a HumanDecision"
        )
    return parsed


def parse_decision(
    request: HumanRequest, flags: DecisionFlags, pauses: Mapping[str, Pause] = PAUSES
) -> HumanDecision | None:
    """The typed decision the options make for ``request``, or None if none was given.

    A decision that does not fit the request is refused with InvalidDecision naming the
    field, as ``Workflow.resume`` refuses it when the command line hands it over.
    """
    from_file = flags.decision_file is not None
    raw = decision_for(request, flags.raw(action_names(pauses)), from_file=from_file)
    return None if raw is None else check_decision(request, raw, pauses)


def decision_for(
    request: HumanRequest, raw: dict[str, Any] | None, *, from_file: bool
) -> dict[str, Any] | None:
    """``raw`` (from ``DecisionFlags.raw``) addressed to ``request``; None stays None.

    Flags answer whatever the thread waits on, so they get the request's id. A decision
    file must name the request itself (its ``interrupt_id`` is what ties it to one thread)
    and is never completed from the thread it is used on. It is not checked here: the
    door it goes through (``Workflow.resume``, ``Queue.submit_decision``) checks it
    against the request it finds, once, and refuses it naming the field.
    """
    if raw is None or from_file:
        return raw
    return {"interrupt_id": request.interrupt_id, **raw}


def prompt_decision(
    request: HumanRequest, thread_id: str, console: Console, pauses: Mapping[str, Pause] = PAUSES
) -> dict[str, Any] | None:
    """Ask on the terminal: show the request, then the action and what it needs.

    End of input (Ctrl-D) or Ctrl-C leaves the decision open: None, so the command ends
    as it does without a terminal (exit 3, the thread still waiting), not "Aborted.".
    """
    try:
        return _ask(request, thread_id, console, pauses)
    except (EOFError, KeyboardInterrupt):
        console.print("\nno decision given; the thread still waits", markup=False)
        return None


def _ask(
    request: HumanRequest, thread_id: str, console: Console, pauses: Mapping[str, Pause]
) -> dict[str, Any]:
    """The prompts follow the action's declaration: what it needs, and what revising takes."""
    render_request(request, thread_id, console, pauses)
    pause = pause_of(request, pauses)
    name = Prompt.ask("action", choices=list(request.allowed_actions), console=console)
    action = pause.action(name)
    decision: dict[str, Any] = {"interrupt_id": request.interrupt_id, "action": name}
    if "reason" in action.needs:
        decision["reason"] = Prompt.ask("reason", console=console)
    asks_extras = name == IMPLIED or any(f in action.needs for f in ("answers", "constraints"))
    if asks_extras and action.allows("answers"):
        answers = []
        for question in request.open_questions:
            text = Prompt.ask(f"answer {question.id} (empty to skip)", default="", console=console)
            if text.strip():
                answers.append({"question_id": question.id, "text": text.strip()})
        decision["answers"] = answers
    if asks_extras and action.allows("constraints"):
        constraint = Prompt.ask("added constraint (empty for none)", default="", console=console)
        decision["constraints"] = [constraint] if constraint.strip() else []
    if action.allows("details") and pause.decision is not None:
        details: dict[str, Any] = {}
        for field_name, field in pause.decision.model_fields.items():
            shown = f"{field_name} ({field.description})" if field.description else field_name
            text = Prompt.ask(f"{shown}, as JSON or text", console=console)
            details[field_name] = _detail(f"{field_name}={text}")[1]
        decision["details"] = details
    return decision
