"""Turning the decision options of ``handoff resume`` into a HumanDecision.

A decision file is read by ``decision_file``; the options each action takes are derived
from its pause in ``decision_hints``; the terminal prompt is ``decision_prompt``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.cli.decision_file import DecisionInputError, read_decision_file, short
from app.cli.decision_hints import (
    ACTION_FLAGS,
    ACTIONS,
    IMPLIED,
    PAUSES,
    action_names,
    flag,
    option,
)
from app.workflow import check_decision
from contracts import HumanDecision, HumanRequest
from graphs.pauses import Pause


def name_value(item: str) -> tuple[str, Any] | None:
    """``NAME=VALUE``: the value as JSON when it parses, else as text; None if not that shape."""
    name, sep, text = item.partition("=")
    if not sep or not name.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    return name.strip(), value


def detail_value(item: str) -> tuple[str, Any]:
    """``NAME=VALUE`` from ``--detail``."""
    found = name_value(item)
    if found is None:
        raise DecisionInputError(
            f"--detail expects NAME=VALUE (the value as JSON, or text), got {short(item)}"
        )
    return found


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
        chosen = [name for name in ACTION_FLAGS if getattr(self, name)]
        named = [flag(name) for name in chosen]
        if self.action is not None:
            if self.action not in actions:
                raise DecisionInputError(
                    f"--action {short(self.action)} is no action; expected one of "
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
                f"{', '.join(option(name) for name in actions if name != IMPLIED)}"
            )
        parsed = []
        for item in self.answers:
            question_id, sep, text = item.partition("=")
            if not sep or not text.strip():
                raise DecisionInputError(f"--answer expects QID=TEXT, got {short(item)}")
            parsed.append({"question_id": question_id.strip(), "text": text.strip()})
        decision: dict[str, Any] = {
            "action": chosen[0] if chosen else IMPLIED,
            "reason": self.reason,
            "answers": parsed,
            "constraints": list(self.constraints),
        }
        if self.details:
            decision["details"] = dict(detail_value(item) for item in self.details)
        return decision


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
