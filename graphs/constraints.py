"""Constraints in force: the task's own, plus those a human added during the run."""

from __future__ import annotations

from contracts import Constraints, Handoff, TaskSpec


def effective_constraints(task: TaskSpec, handoff: Handoff | None) -> Constraints:
    """Task constraints tightened by human-added ones (checkable phrases become checks).

    "at most 120 words" lowers the word limit; "section: Sources" adds a required section;
    anything else stays a prose note that agents receive verbatim.
    """
    constraints = task.constraints
    for item in handoff.constraints if handoff else []:
        if item.provenance.producer == "human":
            constraints = constraints.tightened(item.text)
    return constraints


def task_in_force(task: TaskSpec, handoff: Handoff | None) -> TaskSpec:
    """The task as agents must see it: with every constraint in force applied."""
    return task.model_copy(update={"constraints": effective_constraints(task, handoff)})
