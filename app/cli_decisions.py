"""Turning CLI flags, a decision file or an interactive prompt into a HumanDecision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.prompt import Prompt

from contracts import ErrorCode, HumanRequest
from graphs.errors import ExitCode, HandoffError


class DecisionInputError(HandoffError, ValueError):
    """Flags that do not make one decision (e.g. --approve with --reject)."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


def render_request(request: HumanRequest, thread_id: str, console: Console) -> None:
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
    flags = {
        "approve": "--approve",
        "revise": "--answer QID=TEXT / --constraint TEXT",
        "reject": '--reject --reason "…"',
        "accept_partial": "--accept-partial",
        "grant_round": "--grant-round",
        "abort": '--abort --reason "…"',
    }
    console.print("answer with:", markup=False)
    for action in request.allowed_actions:
        console.print(f"  handoff resume {thread_id} {flags.get(action, action)}", markup=False)
    console.print(f"  or: handoff resume {thread_id} --decision-file decision.json", markup=False)


def decision_from_flags(
    request: HumanRequest,
    *,
    approve: bool,
    reject: bool,
    accept_partial: bool,
    grant_round: bool,
    abort: bool,
    reason: str | None,
    answers: list[str],
    constraints: list[str],
    decision_file: Path | None,
) -> dict[str, Any] | None:
    """The decision the flags describe, or None when no decision flag was given."""
    if decision_file is not None:
        try:
            data = json.loads(decision_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise DecisionInputError(
                f"cannot read decision file {decision_file}: {error}"
            ) from error
        if isinstance(data, dict):
            data.setdefault("interrupt_id", request.interrupt_id)
        return data if isinstance(data, dict) else {"decision": data}
    chosen = [
        name
        for name, flag in (
            ("approve", approve),
            ("reject", reject),
            ("accept_partial", accept_partial),
            ("grant_round", grant_round),
            ("abort", abort),
        )
        if flag
    ]
    if len(chosen) > 1:
        raise DecisionInputError(f"choose one action, not {' and '.join(chosen)}")
    if not chosen and not answers and not constraints:
        return None
    action = chosen[0] if chosen else "revise"
    parsed = []
    for item in answers:
        question_id, sep, text = item.partition("=")
        if not sep or not text.strip():
            raise DecisionInputError(f"--answer expects QID=TEXT, got {item!r}")
        parsed.append({"question_id": question_id.strip(), "text": text.strip()})
    return {
        "interrupt_id": request.interrupt_id,
        "action": action,
        "reason": reason,
        "answers": parsed,
        "constraints": constraints,
    }


def prompt_decision(request: HumanRequest, thread_id: str, console: Console) -> dict[str, Any]:
    """Ask on the terminal: show the request, then the action and what it needs."""
    render_request(request, thread_id, console)
    action = Prompt.ask("action", choices=list(request.allowed_actions), console=console)
    decision: dict[str, Any] = {"interrupt_id": request.interrupt_id, "action": action}
    if action in ("reject", "abort"):
        decision["reason"] = Prompt.ask("reason", console=console)
    if action == "revise":
        answers = []
        for question in request.open_questions:
            text = Prompt.ask(f"answer {question.id} (empty to skip)", default="", console=console)
            if text.strip():
                answers.append({"question_id": question.id, "text": text.strip()})
        constraint = Prompt.ask("added constraint (empty for none)", default="", console=console)
        decision["answers"] = answers
        decision["constraints"] = [constraint] if constraint.strip() else []
    return decision
