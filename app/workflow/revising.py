"""Changing a thread's task: the revision checked at the door, then run as a new version."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from app.errors import InvalidRevision, ThreadFinished, ThreadNotFound
from app.workflow.opened import Opened, thread_config
from app.workflow.reading import ThreadReader
from app.workflow.running import ABANDONED, ProgressCallback, Runner, drained
from contracts import (
    NodeError,
    NodeRun,
    RevisionRefused,
    RunOutcome,
    TaskRevision,
    TaskSpec,
    TaskState,
)
from graphs import RunContext
from graphs.admission import admit
from graphs.boundary import describe_validation_error, read
from graphs.declare import NodeSpec
from graphs.errors import UsageError
from graphs.node_runner import sealed_by


class Reviser:
    """Revising a thread's task; its runs reuse what the change left valid."""

    def __init__(self, opened: Opened, reader: ThreadReader, runner: Runner) -> None:
        self.opened = opened
        self.reader = reader
        self.runner = runner

    def revise(
        self,
        thread_id: str,
        revision: TaskRevision | Mapping[str, Any],
        on_progress: ProgressCallback | None,
    ) -> RunOutcome:
        """Checked as the served graph's door checks it (:func:`revised_task`), then run."""
        self.runner.refuse_if_held(thread_id, "nothing was revised")
        if not self.reader.exists(thread_id):
            raise ThreadNotFound(
                f"no thread {thread_id!r} in {self.opened.where()}; nothing to revise"
            )
        checked = check_revision(thread_id, revision)
        snapshot = self.opened.graph.get_state(thread_config(thread_id))
        self.opened.check_graph(thread_id, snapshot.metadata)
        values = snapshot.values
        nodes = (spec for spec, _ in self.opened.wiring)
        revised_task(thread_id, values, checked, nodes, self.opened.context)
        self.opened.ledger.abandon_running(thread_id, ABANDONED)
        return drained(self.runner.drive({"revision": checked}, thread_id, on_progress))


def check_revision(thread_id: str, revision: Any) -> TaskRevision:
    """The revision as its contract, or InvalidRevision naming the field."""
    try:
        return TaskRevision.model_validate(
            revision.model_dump() if isinstance(revision, TaskRevision) else revision
        )
    except ValidationError as error:
        raise InvalidRevision(
            f"invalid revision for thread {thread_id!r}: {describe_validation_error(error)}"
        ) from error


def revised_task(
    thread_id: str,
    values: Mapping[str, Any],
    revision: TaskRevision,
    nodes: Iterable[NodeSpec],
    ctx: RunContext,
) -> TaskSpec:
    """The task ``revision`` makes of the thread's (its state ``values``), or why it is refused.

    Asked before a revision's run exists, by ``Workflow.revise`` and by the served graph's
    door (``app/server/auth.py``), so every way in refuses the same revisions: once its run
    starts, LangGraph has already dropped a waiting thread's pending request, and
    ``revise_task`` can only end the run. Raises ThreadFinished for a thread that ended
    sealed or was cancelled, InvalidRevision for one with no task or a revision that cannot
    apply to it (naming the field), and what a node would raise for a task it refuses
    (``graphs.admission``: SourceRefused, naming the corpus path).
    """
    ended = read(values, "outcome", RunOutcome, node="workflow")
    sealer = sealed_by(ctx.ledger.runs(thread_id))
    if ended is not None and ended.state.ended and sealer is not None:
        raise ThreadFinished(
            f"thread {thread_id!r} ended sealed ({sealer}): it is never revised in place; "
            "refine it as a new task (docs/a2a.md), or start a new thread",
            ended,
        )
    if ended is not None and ended.state == TaskState.CANCELED:
        raise ThreadFinished(
            f"thread {thread_id!r} was cancelled ({ended.reason}); a cancelled thread is "
            "not revised: start a new one with the revised task",
            ended,
        )
    task = read(values, "task", TaskSpec, node="workflow")
    if task is None:
        raise InvalidRevision(f"thread {thread_id!r} has no task yet; nothing to revise")
    specs = list(nodes)
    try:
        try:
            revised = revision.applied_to(task)
        except RevisionRefused as error:
            raise InvalidRevision(
                f"invalid revision for thread {thread_id!r} (task v{task.task_version}): {error}"
            ) from error
        admit(revised, specs, ctx)
    except UsageError as refused:  # InvalidRevision, or what a node refuses (SourceRefused)
        audit_refusal(thread_id, task, revision, specs, ctx, refused.message)
        raise
    return revised


def audit_refusal(
    thread_id: str,
    task: TaskSpec,
    revision: TaskRevision,
    nodes: list[NodeSpec],
    ctx: RunContext,
    why: str,
) -> None:
    """Record a refused revision in the thread's audit, as ``revise_task`` records its own.

    The thread is left exactly as it was, but its history says a revision was asked and
    why it was refused (a failed ``refused_input`` attempt of the node a revision starts
    at, never reused), so ``handoff history`` never shows a refused revision as accepted
    nor as nothing at all.
    """
    node = next((spec.name for spec in nodes if spec.starts_on == "revision"), "revise_task")
    now = ctx.clock()
    refusal = NodeRun(
        task_version=task.task_version,
        node_id=node,
        attempt=1,
        status="failed",
        input_hash=hashlib.sha256(revision.model_dump_json().encode("utf-8")).hexdigest(),
        started_at=now,
        ended_at=now,
        duration_ms=0,
        error=NodeError(kind="refused_input", detail=why[:4000]),
        note=f"revision refused: {why}"[:500],
    )
    seq = ctx.ledger.start(thread_id, refusal)
    ctx.ledger.finish(thread_id, seq, refusal)
