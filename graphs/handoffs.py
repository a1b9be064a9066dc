"""Building the envelope each node hands to the next."""

from __future__ import annotations

from contracts import (
    ArtifactRef,
    AuthoritativeInput,
    ConstraintItem,
    Handoff,
    NextAction,
    ResearchBundle,
    TaskSpec,
    ToolReceipt,
)
from graphs.ports import StepInfo


def task_constraints(task: TaskSpec, step: StepInfo) -> list[ConstraintItem]:
    """The task's constraints, restated as envelope items with provenance."""
    items = []
    provenance = step.provenance(producer="task")
    if task.constraints.max_words is not None:
        items.append(
            ConstraintItem(
                text=f"at most {task.constraints.max_words} words", provenance=provenance
            )
        )
    for title in task.constraints.required_sections:
        items.append(ConstraintItem(text=f"section: {title}", provenance=provenance))
    for note in task.constraints.notes:
        items.append(ConstraintItem(text=note, provenance=provenance))
    return items


def source_inputs(bundle: ResearchBundle, step: StepInfo) -> list[AuthoritativeInput]:
    """Each source, pinned to the hash of the bytes research read."""
    return [
        AuthoritativeInput(
            name=f"source {source.id}",
            uri=source.uri,
            sha256=source.sha256,
            provenance=step.provenance(),
        )
        for source in bundle.sources
    ]


def _pins(
    bundle: ResearchBundle | None, step: StepInfo, previous: Handoff | None
) -> list[AuthoritativeInput]:
    """Source pins, kept from the previous envelope unless research just re-read them.

    Keeping them preserves a person's re-pin (accept_new_revision) and its provenance.
    """
    if bundle is None:
        return []
    kept = {item.uri: item for item in previous.authoritative_inputs} if previous else {}
    return [kept.get(item.uri, item) for item in source_inputs(bundle, step)]


def build_handoff(
    task: TaskSpec,
    step: StepInfo,
    *,
    next_action: NextAction,
    bundle: ResearchBundle | None,
    artifacts: list[ArtifactRef],
    receipts: list[ToolReceipt] | None = None,
    previous: Handoff | None = None,
    repin_sources: bool = False,
) -> Handoff:
    """An envelope that carries forward earlier decisions and pins what is handed over."""
    carried_decisions = list(previous.accepted_decisions) if previous else []
    carried_constraints = [
        item
        for item in (previous.constraints if previous else [])
        if item.provenance.producer != "task"
    ]
    open_questions = (
        list(previous.open_questions)
        if previous and previous.open_questions
        else list(bundle.open_questions if bundle else [])
    )
    return Handoff(
        granted_review_rounds=previous.granted_review_rounds if previous else 0,
        task_id=task.task_id,
        task_version=task.task_version,
        objective=task.objective,
        from_node=step.node,
        next_allowed_action=next_action,
        accepted_decisions=carried_decisions,
        constraints=task_constraints(task, step) + carried_constraints,
        authoritative_inputs=_pins(bundle, step, None if repin_sources else previous),
        artifacts=artifacts,
        tool_receipts=list(receipts or []),
        open_questions=open_questions,
        provenance=step.provenance(),
    )
