"""The decision asked for on a terminal, prompt by prompt, as the pause declares it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.prompt import Prompt

from app.cli.decision_hints import IMPLIED, PAUSES, render_request
from app.cli.decisions import detail_value
from app.workflow import pause_of
from contracts import HumanRequest
from graphs.pauses import Pause


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
    contract = pause.details_contract(name)
    if contract is not None:
        details: dict[str, Any] = {}
        for field_name, field in contract.model_fields.items():
            shown = f"{field_name} ({field.description})" if field.description else field_name
            text = Prompt.ask(f"{shown}, as JSON or text", console=console)
            details[field_name] = detail_value(f"{field_name}={text}")[1]
        decision["details"] = details
    return decision
