"""Admitting a task: whether the workflow's nodes would take it, asked before anything is saved.

A new task (``Workflow.run``) and a revised one (``revise_task``, ``Workflow.revise``) pass
the same check, so no way in serves a task another would refuse.
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts import TaskSpec
from graphs.context import RunContext
from graphs.declare import NodeSpec


def admit(task: TaskSpec, nodes: Iterable[NodeSpec], ctx: RunContext) -> None:
    """Raise what the first of ``nodes`` to refuse ``task`` raises before it starts.

    Each node's fingerprint (what it will read outside state, e.g. the corpus) is what the
    graph computes before the node starts, and it raises for input the rules refuse
    (SourceRefused: a corpus path outside the roots, a device, a file over the limit).
    Asked first, it turns that failure mid-run into a refusal that has changed nothing.
    """
    for spec in nodes:
        if spec.fingerprint is not None:
            agent = ctx.agent_for(spec) if spec.agent is not None else None
            spec.fingerprint(agent, task)
