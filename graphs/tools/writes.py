"""A write tool's call: confirmed by a person in one node, run at most once in the next.

Two nodes share one write call (``WriteCall``, built the same way from state by both):

* the asking node pauses with ``CONFIRM_WRITE`` (its one pause) and calls
  ``confirm_write``: the person sees the call exactly as it would run (tool, arguments
  without the sensitive fields, target) and approves or rejects it; the decision is in
  the log the node returns, so it is saved with the node's checkpoint, before anything is
  written. Rejected, the call never runs, and the person's reason is on record.
* the writing node, which does not pause, runs after an approval (its router sends it
  there) and calls ``approved_write``: the toolbox runs the call and records what it did
  in the ledger before the node goes on.

Why two nodes: a node that calls ``interrupt()`` re-runs from its start on resume, and its
answer is saved only with its result. A process killed during a write made in the asking
node would leave the question open after the file was written, and a later answer could
contradict what had happened. Split, a kill in the writing node leaves the approval on
record and the write to finish: a resume runs the writing node again, which answers the
call from the ledger if it was recorded, and otherwise runs it again; a crash between the
write and its record runs the code again, so a write tool's code must see its own earlier
effect (e.g. a file that already holds exactly these bytes).

A call that failed for a reason that may pass (``retryable``) is asked again: the asking
node shows the failure (``failed=``), and a new approval runs the same call once more.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from contracts import DecisionLog, HumanDecision, WriteConfirmation
from graphs.declare import NodeCall
from graphs.errors import ContractViolation
from graphs.human import ask, pause_request, recorded
from graphs.pauses import Action, Pause
from graphs.tools.bounds import summary_of
from graphs.tools.declare import ToolSpec
from graphs.tools.toolbox import ToolResult, target_of

CONFIRM_WRITE = Pause(
    "confirm_write",
    actions=(
        Action("approve", inbox=("accept",)),
        Action("reject", needs=("reason",), inbox=("ignore", "response")),
    ),
    request=WriteConfirmation,
)
"""Run this write call (approve), or never (reject, with the reason)."""


@dataclass(frozen=True)
class WriteCall:
    """One write call, as a person confirms it and as it runs.

    Both nodes derive it from state, never from a clock, so the call approved is the call
    run: the same arguments and ``call_id`` (it runs at most once per thread and id).
    """

    tool: ToolSpec
    args: BaseModel
    call_id: str
    target: str
    """What it changes, unless the tool's code says it more exactly (``target(args)``)."""

    def __post_init__(self) -> None:
        if self.tool.kind != "write":
            raise TypeError(f"tool {self.tool.name!r} is a {self.tool.kind} tool, not a write")


@dataclass(frozen=True)
class Confirmation:
    """A person's answer to a write call, and the decision log that records it."""

    decision: HumanDecision
    decisions: DecisionLog

    @property
    def approved(self) -> bool:
        """Whether the call may run (the writing node runs next)."""
        return self.decision.action == "approve"


def confirm_write(call: NodeCall, write: WriteCall, *, failed: str | None = None) -> Confirmation:
    """Ask a person to confirm ``write``; the asking node returns the log it records.

    ``failed`` is why the last run of this very call failed, when it is asked again.
    """
    if call.spec.pauses != CONFIRM_WRITE:
        raise TypeError(
            f"node {call.spec.name!r} asks to confirm write tool {write.tool.name!r}: it must "
            "pause with CONFIRM_WRITE (pauses=CONFIRM_WRITE)"
        )
    name = write.tool.name
    target = target_of(write.tool, call.ctx.tools, write.args) or write.target
    details = WriteConfirmation(
        tool=name,
        call_id=write.call_id,
        arguments=summary_of(write.tool, write.args)[:2000],
        target=target,
    )
    question = f"Run {name} on {target}? It writes outside the run; it runs once."
    if failed is not None:
        question = f"{name} on {target} failed ({failed}). Run it again? It runs once."
    request = pause_request(CONFIRM_WRITE, call.step, question=question[:2000], details=details)
    decision = ask(CONFIRM_WRITE, request)
    return Confirmation(decision, recorded(call.read("decisions"), decision, request, call.step))


def approved(log: DecisionLog | None) -> bool:
    """Whether the thread's latest decision approves a write call (its router's question)."""
    last = log.last() if log is not None else None
    return last is not None and last.request_kind == CONFIRM_WRITE.kind and last.action == "approve"


def approved_write(call: NodeCall, write: WriteCall) -> ToolResult:
    """Run ``write``, which a person approved in the node before this one, at most once."""
    if call.spec.pauses is not None:
        raise TypeError(
            f"node {call.spec.name!r} runs write tool {write.tool.name!r} and pauses: a write "
            "runs in a node after the one that asks (CONFIRM_WRITE), so a kill after the "
            "write never asks again"
        )
    if write.tool not in call.spec.tools:
        raise TypeError(
            f"node {call.spec.name!r} declares no write tool {write.tool.name!r}; its tools: "
            f"{[(tool.name, tool.kind) for tool in call.spec.tools]}"
        )
    log: DecisionLog | None = call.read("decisions")
    if not approved(log):
        last = log.last() if log is not None else None
        raise ContractViolation(
            f"node {call.spec.name!r} runs {write.tool.name!r} (call {write.call_id!r}) only "
            f"after a person approved it; the thread's last decision is "
            f"{last.summary() if last else 'none'}",
            node=call.spec.name,
            channel="decisions",
            fields=["decisions"],
        )
    return call.tools.call(write.tool.name, write.args, call_id=write.call_id, confirmed=True)
