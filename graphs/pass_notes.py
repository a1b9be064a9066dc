"""Why a node's pass ran, or was reused, on a revised task: the audit's note for it.

After a revision (``revise_task``) every node is visited again; its input hash decides
whether it reuses its earlier result. The audit says which, per node: "reused (task v1)",
or "re-run for task v2: task, research changed since v1", from the digests each pass
recorded of its inputs (``NodeRun.inputs``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contracts import NodeRun

if TYPE_CHECKING:
    from graphs.visit import Visit


def reuse_note(visit: Visit) -> str | None:
    """The task version whose pass recorded the result being reused."""
    origin = [run for run in _own_runs(visit) if run.input_hash == visit.key and _worked(run)]
    return reused_from(origin[-1].task_version) if origin else None


def reused_from(version: int) -> str:
    """The audit's note on a pass that reused the result task ``version`` recorded."""
    return f"reused (task v{version})"


def origins(runs: list[NodeRun], node: str) -> dict[str, int]:
    """The task version whose pass recorded each input hash's result (the latest wins)."""
    return {
        run.input_hash: run.task_version for run in runs if run.node_id == node and _worked(run)
    }


def version_note(visit: Visit) -> str | None:
    """Why a revised task's first pass of this node runs: which inputs changed, or new."""
    version = visit.step.task_version
    if version == 1:
        return None
    runs = _own_runs(visit)
    if any(run.task_version == version for run in runs):
        return None  # not this version's first pass: its own reason, if any, says why
    earlier = [run for run in runs if _worked(run)]
    if not earlier:
        return f"new for task v{version}"
    last = earlier[-1]
    before = dict(item.split(":", 1) for item in last.inputs)
    changed = [
        name for name, digest in sorted(visit.inputs.items()) if before.get(name) != digest[:12]
    ]
    return (
        f"re-run for task v{version}: {', '.join(changed) or 'its inputs'} changed "
        f"since v{last.task_version}"
    )


def _own_runs(visit: Visit) -> list[NodeRun]:
    """The node's finished passes on the thread (a branch's: of its own key)."""
    branch = (visit.inputs.get("branch") or "")[:12]
    return [
        run
        for run in visit.ctx.ledger.runs(visit.step.thread_id)
        if run.node_id == visit.spec.name
        and run.status != "running"
        and (not branch or f"branch:{branch}" in run.inputs)
    ]


def _worked(run: NodeRun) -> bool:
    return run.status == "succeeded" and not run.reused
