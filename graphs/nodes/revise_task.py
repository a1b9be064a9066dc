"""Revise the task: how a thread's scope changes after it started.

A run whose input carries a revision (``Workflow.revise``, ``handoff revise``, or a served
run with input ``{"revision": {...}}``) starts here. The revision becomes the task's next
version and an accepted decision; everything derived from the old task leaves the state,
and the run starts over at research. Each node then reuses its earlier result when its
input hash (its view of the task, its inputs) is unchanged, and re-runs otherwise: a
tighter word limit re-runs the Writer and the Reviewer, not research.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from contracts import (
    MOVED_QUESTIONS,
    REVISE_ACTION,
    DecisionLog,
    RecordedDecision,
    ResearchBundle,
    RevisionRefused,
    RunOutcome,
    TaskRevision,
    TaskSpec,
    moved_questions,
)
from graphs.admission import admit
from graphs.declare import node
from graphs.errors import SourceRefused
from graphs.node_runner import NodeCall, NodeResult, sealed_by
from graphs.research_holds import RESEARCH, record_reused, research_holds


class ReviseInput(TypedDict):
    """The task as it is, the revision asked for, and the decisions made so far.

    The research too: it is kept when it still holds for the revised task.
    """

    task: TaskSpec
    revision: TaskRevision | None
    decisions: DecisionLog | None
    research: ResearchBundle | None
    outcome: RunOutcome | None


class ReviseOutput(TypedDict, total=False):
    """The task's next version and the decision recording it; derived work cleared.

    The node starts the task over (``starts_over``): the build adds every channel another
    node writes, and the body clears all but ``KEPT``.
    """

    task: TaskSpec
    revision: TaskRevision | None
    decisions: DecisionLog | None


KEPT = frozenset(ReviseOutput.__annotations__)
"""What a revision keeps: the task, the revision's channel and the decisions made. All else
the old task's run produced is cleared, so no node reads it as the new task's (the research
bundle is kept when it still holds: ``graphs.research_holds``)."""


@node(
    "revise_task",
    reads=ReviseInput,
    writes=ReviseOutput,
    retry=None,
    starts_on="revision",
    starts_over=True,
)
def revise_task(call: NodeCall) -> NodeResult:
    """Apply the revision, or leave the thread exactly as it was when it cannot apply.

    ``Workflow.revise`` and the served graph's door check a revision before its run exists
    (on a waiting thread the run's start already drops the pending request), so a refusal
    here is the last guard, for a caller of the graph itself (``graph.invoke``) or a corpus
    changed since the door looked. The revised task is checked in full first: it must
    apply, and every node must admit it as it would a new task (``graphs.admission``: a
    corpus the rules refuse). Refused, nothing is written (``NodeResult.refusal``): the
    thread keeps its task, results and outcome, the router ends the run on the revision
    still in its channel, which the run's end clears, and the audit says why. A thread
    that ended sealed (an A2A task: ``graphs.node_runner.SEALED``) is refused so too.
    """
    revision: TaskRevision = call.require("revision")
    ended: RunOutcome | None = call.read("outcome")
    sealer = sealed_by(call.ctx.ledger.runs(call.step.thread_id))
    if ended is not None and ended.state.ended and sealer is not None:
        return NodeResult.refusal(f"revision refused: the thread ended sealed ({sealer})")
    try:
        task = revision.applied_to(call.task)
        admit(task, call.nodes.values(), call.ctx)
    except (RevisionRefused, SourceRefused) as error:
        return NodeResult.refusal(f"revision refused: {error}")
    log: DecisionLog | None = call.read("decisions")
    changes = revision.changes_asked()
    decision = RecordedDecision(
        interrupt_id=f"revise-task-v{task.task_version}",
        request_kind=call.spec.name,
        action=REVISE_ACTION,
        reason=revision.reason,
        decided_by=revision.decided_by,
        details={
            "task_version": task.task_version,
            "changes": changes,  # type: ignore[dict-item]
            "decided_at": call.ctx.clock().isoformat(),
            MOVED_QUESTIONS: moved_questions(call.task, task),  # type: ignore[dict-item]
        },
        provenance=call.step.provenance().model_copy(update={"producer": "human"}),
    )
    decisions = [*(log.decisions if log else []), decision]
    update: dict[str, Any] = {name: None for name in call.spec.outputs if name not in KEPT}
    update.update(task=task, revision=None, decisions=DecisionLog(decisions=decisions))
    note = f"task v{call.task.task_version} -> v{task.task_version}: {'; '.join(changes)}"
    held = research_holds(call, task)
    if held is not None:  # research would replay every branch: kept, and the run goes on
        update.pop(RESEARCH, None)
        record_reused(call, task, held)
        note += f"; research holds ({len(held)} branches reused)"
    return NodeResult(update, note=note[:500])
