"""A write tool's call, confirmed by a person before it runs, and run at most once.

A node that declares a write tool pauses with ``CONFIRM_WRITE`` (its one pause) and calls
the tool through ``confirmed_write``: the person sees the call exactly as it would run
(tool, arguments without the sensitive fields, target) and approves or rejects it. Approved,
the toolbox runs it and records what it did in the ledger before the node goes on, so a
resume after a crash answers the call from that record; rejected, it never runs, and the
refusal is recorded as the person's decision with their reason.

The node re-runs from its start on every resume (``interrupt()``), so it must build the
same call each time: its arguments and ``call_id`` derive from state, never from a clock.
A crash between the write and its record runs the call again, so a write tool's code
must see its own earlier effect (e.g. a file that already holds exactly these bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from contracts import DecisionLog, HumanDecision, WriteConfirmation
from graphs.human import ask, pause_request, recorded
from graphs.node_call import NodeCall
from graphs.pauses import Action, Pause
from graphs.tools.bounds import summary_of
from graphs.tools.toolbox import ToolResult

CONFIRM_WRITE = Pause(
    "confirm_write",
    actions=(Action("approve"), Action("reject", needs=("reason",))),
    request=WriteConfirmation,
)
"""Run this write call (approve), or never (reject, with the reason)."""


@dataclass(frozen=True)
class Confirmed:
    """How a write call went: what it did (None: rejected) and the decision recorded."""

    result: ToolResult | None
    decision: HumanDecision
    decisions: DecisionLog


def confirmed_write(
    call: NodeCall, name: str, args: BaseModel, *, call_id: str, target: str
) -> Confirmed:
    """Ask a person to confirm the write call ``name(args)``, then run it once or never.

    ``target`` says what it changes, unless the tool's code says it more exactly
    (``target(args)``, e.g. the file's path in the export folder).
    """
    spec = next((spec for spec in call.spec.tools if spec.name == name), None)
    if spec is None or spec.kind != "write":
        raise TypeError(
            f"node {call.spec.name!r} declares no write tool {name!r}; its tools: "
            f"{[(tool.name, tool.kind) for tool in call.spec.tools]}"
        )
    if call.spec.pauses != CONFIRM_WRITE:
        raise TypeError(
            f"node {call.spec.name!r} calls write tool {name!r}: it must pause with "
            "CONFIRM_WRITE (pauses=CONFIRM_WRITE) so a person confirms each call"
        )
    target = call.tools.target_of(name, args) or target
    details = WriteConfirmation(
        tool=name, call_id=call_id, arguments=summary_of(spec, args)[:2000], target=target
    )
    request = pause_request(
        CONFIRM_WRITE,
        call.step,
        question=f"Run {name} on {target}? It writes outside the run; it runs once.",
        details=details,
    )
    decision = ask(CONFIRM_WRITE, request)
    log = recorded(call.read("decisions"), decision, request, call.step)
    if decision.action != "approve":
        return Confirmed(None, decision, log)
    result = call.tools.call(name, args, call_id=call_id, confirmed=True)
    return Confirmed(result, decision, log)
