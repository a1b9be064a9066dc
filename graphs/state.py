"""The workflow's own channels; each node declares the rest in its ``reads``/``writes``.

The graph's state schema is composed from these and every node's declarations when the
graph is built (``graphs.graph.workflow_channels``): a channel's contract is written once,
where it is declared, and two declarations that disagree fail the build. State holds
validated contract objects and artifact references, nothing else.

The audit log (NodeRun records) is kept beside the thread by a RunLedger, not in state: it
must also hold attempts that failed or crashed, which never reach a checkpoint.
"""

from __future__ import annotations

from typing import Annotated, NotRequired

from typing_extensions import TypedDict

from contracts import (
    BranchResults,
    BranchTask,
    Handoff,
    RunOutcome,
    TaskRevision,
    TaskSpec,
)


class WorkflowInput(TypedDict):
    """What a caller (Python, CLI or the dev server) passes to start a run.

    A thread's first run carries its task; a later run may carry a revision of it
    instead (``{"revision": {...}}``), which starts at ``revise_task``.
    """

    task: NotRequired[TaskSpec]
    revision: NotRequired[TaskRevision | None]


class RunnerWrites(TypedDict, total=False):
    """Channels the node runner writes for every node."""

    handoff: Handoff | None
    """The envelope the node hands to the node the route picked, derived from state."""
    outcome: RunOutcome | None
    """Set when the run ends (or must stop: budget spent, retries exhausted)."""
    task: TaskSpec
    """The task again, when the run's choices (``RunContext.choices``) changed it."""
    branches: Annotated[BranchResults | None, BranchResults.merged]
    """What each parallel branch produced, by (node, key); branches write it side by side
    (its reducer merges their writes), their join reads it."""


class BranchInput(TypedDict):
    """What a branch node reads besides its declared inputs: the branch it runs.

    A fan-out hands it to each task it starts (LangGraph's ``Send``); it is never written
    to the thread's state.
    """

    branch: BranchTask


class JoinInput(TypedDict):
    """What a join reads besides its declared inputs: every branch's result."""

    branches: BranchResults | None
