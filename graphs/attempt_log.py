"""An attempt's ledger entry: written as 'running' when it starts, finished exactly once.

The row exists before the node does its work, so an attempt cut short (a kill, a lost
database) stays on record as running until a resume marks it failed; a succeeded one
stores the update it returned, for a re-run with the same input hash to reuse.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from contracts import ErrorKind, NodeError, NodeRun, Usage
from graphs.pass_notes import reuse_note, version_note
from graphs.ports import RunLedger, StepInfo

if TYPE_CHECKING:
    from graphs.declare import NodeCall, NodeResult
    from graphs.visit import Visit


class Attempt:
    """One ledger entry: written as 'running' when it starts, finished exactly once."""

    def __init__(self, visit: Visit, step: StepInfo, call: NodeCall | None = None) -> None:
        self.visit = visit
        self.step = step
        self.call = call
        """The body's view, whose tool calls a failed attempt still records."""
        self.began = time.perf_counter()
        self.why = version_note(visit)
        """Why this pass runs on a revised task (read before its own row is written)."""
        self.record = NodeRun(
            task_version=step.task_version,
            node_id=step.node,
            attempt=step.attempt,
            status="running",
            input_hash=visit.key,
            inputs=[f"{name}:{digest[:12]}" for name, digest in sorted(visit.inputs.items())],
            agent=visit.agent,
            started_at=visit.ctx.clock(),
        )
        self.seq = visit.ctx.ledger.start(step.thread_id, self.record)

    def finish(
        self,
        result: NodeResult | None = None,
        *,
        update: dict[str, Any] | None = None,
        usage: Usage | None = None,
        error: tuple[ErrorKind, str] | None = None,
        reused: bool = False,
    ) -> None:
        """Record how the attempt ended; a succeeded one stores the update it returns.

        A failed attempt is charged for the tool calls it made, and receipts them. A
        refusal (``NodeResult.refused``) is a failed attempt that says why, and stores
        nothing a later visit could reuse as the node's work.
        """
        if result is not None and result.refused:
            error, update = ("refused_input", result.note or "input refused"), None
        toolbox = self.call.opened_tools() if self.call and result is None else None
        if toolbox is not None:
            usage = toolbox.charged(usage or Usage())
        final = self.record.model_copy(
            update={
                "status": "failed" if error else "succeeded",
                "ended_at": self.visit.ctx.clock(),
                "duration_ms": round((time.perf_counter() - self.began) * 1000, 3),
                "usage": result.usage if result else usage or Usage(),
                "artifact_ids": result.artifact_ids if result else [],
                "checked_inputs": result.checked_inputs if result else [],
                "tool_receipts": result.receipts if result else toolbox.receipts if toolbox else [],
                "error": NodeError(kind=error[0], detail=error[1][:4000]) if error else None,
                "reused": reused,
                "note": (result.note if result else None)
                or (reuse_note(self.visit) if reused else self.why),
            }
        )
        stored = None if update is None else _dump(update)
        self.visit.ctx.ledger.finish(self.step.thread_id, self.seq, final, stored)

    def finish_waiting(self) -> None:
        """The node paused for a human (an interrupt); it will run again on resume."""
        final = self.record.model_copy(
            update={"status": "waiting_user", "ended_at": self.visit.ctx.clock()}
        )
        self.visit.ctx.ledger.finish(self.step.thread_id, self.seq, final)


def _dump(update: dict[str, Any]) -> str:
    """The update as one JSON object (contracts serialised by pydantic, not re-walked)."""
    members = ",".join(
        f"{json.dumps(channel)}:"
        + (value.model_dump_json() if isinstance(value, BaseModel) else json.dumps(value))
        for channel, value in sorted(update.items())
    )
    return "{" + members + "}"


def record_event(
    ledger: RunLedger,
    thread_id: str,
    *,
    task_version: int,
    label: str,
    detail: str,
    clock: Callable[[], datetime],
) -> None:
    """An audit row for what happened to a thread outside any node (a cancel, a run choice).

    It is started and finished at once, as a succeeded attempt named ``label``, so
    ``history`` shows it in order among the node runs; ``detail`` is hashed as its input.
    """
    now = clock()
    event = NodeRun(
        task_version=task_version,
        node_id=label[:100],
        attempt=1,
        status="succeeded",
        input_hash=hashlib.sha256(detail.encode()).hexdigest(),
        started_at=now,
        ended_at=now,
        duration_ms=0,
    )
    ledger.finish(thread_id, ledger.start(thread_id, event), event)


SEALED = "sealed once ended: "
"""The audit label of a thread that, once it has ended, is never revised in place (an A2A
task: a refinement is a new task). What follows it names who sealed it."""


def sealed_by(runs: list[NodeRun]) -> str | None:
    """Who sealed the thread these audit rows are of, if anyone (see ``SEALED``)."""
    for run in runs:
        if run.node_id.startswith(SEALED):
            return run.node_id.removeprefix(SEALED)
    return None
