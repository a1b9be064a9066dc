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

from contracts import NodeRun, TaskSpec
from graphs.declare import NodeCall, NodeSpec
from graphs.fan_out import branch_tasks
from graphs.input_hash import hash_of, input_digests
from graphs.node_runner import origins, reused_from

RESEARCH = "research"


Held = list[tuple[NodeSpec, str, dict[str, str]]]
"""Each kept branch task: its branch node, its input hash and the digests of its inputs."""


def research_holds(call: NodeCall, task: TaskSpec) -> Held | None:
    """Each branch task of research's fan-out with its input hash, when the bundle holds.

    The fan-out is research's and every kind of work its join waits for beside it (an
    outline planned per question), started together as a route to research starts them.
    It holds when ``task`` starts the tasks the thread's task (``call.task``) started, each
    with the same view of the task (so what the join merged was made from what they would
    read), and each would replay a recorded result: the first pass of every branch,
    reading no earlier bundle, has one (the corpus on disk is what it read then). None when
    the state holds no bundle, or a branch would do new work.
    """
    spec = call.nodes.get(RESEARCH)
    if spec is None or spec.branch is None or call.read("research") is None:
        return None
    kinds = next(
        (
            list(join.joins)
            for join in call.nodes.values()
            if spec.name in {kind.name for kind in join.joins}
        ),
        [spec],
    )
    if any(kind.task_view is None for kind in kinds):
        return None
    first: dict[str, object] = {channel: None for kind in kinds for channel in kind.inputs}
    started = branch_tasks(kinds, {**first, "task": task}, call.runtime)
    before = branch_tasks(kinds, {**first, "task": call.task}, call.runtime)
    if [b for _, b in started] != [b for _, b in before]:
        return None
    found: Held = []
    for kind, branch in started:
        view = kind.task_view
        assert view is not None
        if view(task, branch.key) != view(call.task, branch.key):
            return None
        digests = input_digests(kind, {**first, "task": task, "branch": branch}, call.ctx, task)
        key_hash = hash_of(digests)
        if call.ctx.ledger.result(call.step.thread_id, kind.name, key_hash) is None:
            return None
        found.append((kind, key_hash, digests))
    return found


def record_reused(call: NodeCall, task: TaskSpec, held: Held) -> None:
    """Audit each kept branch as a reused pass of the new task version, as a visit would.

    A branch already audited so for this version is not audited again: ``revise_task``
    runs again when its process died after auditing but before its step was saved.
    """
    runs = call.ctx.ledger.runs(call.step.thread_id)
    audited = {
        (run.node_id, run.input_hash)
        for run in runs
        if run.reused and run.task_version == task.task_version
    }
    now = call.ctx.clock()
    for spec, key_hash, digests in held:
        if (spec.name, key_hash) in audited:
            continue
        earlier = origins(runs, spec.name)
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
