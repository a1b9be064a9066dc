"""Whether a thread's research still holds for a revised task, without running it again.

A revision starts over at research, whose branches then reuse their recorded results when
their inputs are unchanged. When every branch would, the research already in the state is
what research would produce again (each branch's result is replayed, and the join merges
them the same way), so ``revise_task`` keeps it and the run goes on from where the join
would: two steps and every branch's bookkeeping fewer. The audit still records each
branch as reused, so ``handoff history`` reads the same either way.
"""

from __future__ import annotations

from dataclasses import replace

from contracts import BranchTask, NodeRun, TaskSpec
from graphs.declare import NodeCall, NodeSpec
from graphs.input_hash import hash_of, input_digests
from graphs.node_runner import origins, reused_from

RESEARCH = "research"


def research_holds(call: NodeCall, task: TaskSpec) -> list[tuple[str, dict[str, str]]] | None:
    """Each research branch's input hash and digests, when the bundle holds for ``task``.

    It holds when ``task`` starts the branches the thread's task (``call.task``) started,
    each with the same view of the task (so the bundle in the state was made from what
    they would read), and each would replay a recorded result: the first pass of every
    branch, reading no earlier bundle, has one (the corpus on disk is what it read then).
    None when the state holds no bundle, or a branch would do new work.
    """
    spec = call.nodes.get(RESEARCH)
    if spec is None or spec.branch is None or call.read("research") is None:
        return None
    first: dict[str, object] = {channel: None for channel in spec.inputs}
    keys = spec.branch({**first, "task": task})
    if keys != spec.branch({**first, "task": call.task}) or spec.task_view is None:
        return None
    view = spec.task_view
    if any(view(task, key) != view(call.task, key) for key in keys):
        return None
    first["task"] = task
    found = []
    for key in keys:
        branch = BranchTask(node=spec.name, key=key, tasks=len(keys), nodes=[spec.name])
        digests = input_digests(spec, {**first, "branch": branch}, call.ctx, task)
        key_hash = hash_of(digests)
        if call.ctx.ledger.result(call.step.thread_id, spec.name, key_hash) is None:
            return None
        found.append((key_hash, digests))
    return found


def record_reused(
    call: NodeCall, task: TaskSpec, spec: NodeSpec, held: list[tuple[str, dict[str, str]]]
) -> None:
    """Audit each kept branch as a reused pass of the new task version, as a visit would.

    A branch already audited so for this version is not audited again: ``revise_task``
    runs again when its process died after auditing but before its step was saved.
    """
    runs = call.ctx.ledger.runs(call.step.thread_id)
    earlier = origins(runs, spec.name)
    audited = {
        run.input_hash
        for run in runs
        if run.node_id == spec.name and run.reused and run.task_version == task.task_version
    }
    now = call.ctx.clock()
    for key_hash, digests in held:
        if key_hash in audited:
            continue
        run = NodeRun(
            task_version=task.task_version,
            node_id=spec.name,
            attempt=1,
            status="succeeded",
            input_hash=key_hash,
            inputs=[f"{name}:{digest[:12]}" for name, digest in sorted(digests.items())],
            started_at=now,
            ended_at=now,
            duration_ms=0,
            reused=True,
            note=reused_from(earlier.get(key_hash, task.task_version - 1)),
        )
        call.ctx.ledger.finish(
            call.step.thread_id, call.ctx.ledger.start(call.step.thread_id, run), run
        )
        traced = replace(call.step, node=spec.name, attempt=1, task_version=task.task_version)
        call.ctx.trace.attempt(traced, run).ended(run)  # its span says it reused, as the row
