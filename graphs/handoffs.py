"""The handoff envelope, derived: one function of state and the route the graph took.

Nothing in the envelope is carried from one envelope to the next by hand. Decisions,
human constraints, answers and re-pins come from the decision log; pins and artifacts from
the contracts in state; the next allowed action is the node the graph runs next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from contracts import (
    MOVED_QUESTIONS,
    REVISE_ACTION,
    ArtifactRef,
    AuthoritativeInput,
    ConstraintItem,
    Decision,
    DecisionLog,
    DraftArticle,
    Handoff,
    Question,
    ResearchBundle,
    RunOutcome,
    TaskSpec,
    ToolReceipt,
)
from graphs.boundary import read, require
from graphs.freshness import refs_of
from graphs.ports import StepInfo

if TYPE_CHECKING:
    from graphs.declare import NodeSpec

ENVELOPE_READS = frozenset({"task", "research", "decisions", "draft", "review", "outcome"})
"""The channels an envelope is derived from (a stop's outcome keeps the draft too): every
node's runner reads them, so LangGraph hands them to every node (``node_schema``). A read
of another one here fails the first run loudly (``CheckedState``), never reads as None."""


def task_constraints(task: TaskSpec, step: StepInfo) -> list[ConstraintItem]:
    """The task's constraints, restated as envelope items with provenance."""
    provenance = step.provenance(producer="task")
    texts = []
    if task.constraints.max_words is not None:
        texts.append(f"at most {task.constraints.max_words} words")
    texts += [f"section: {title}" for title in task.constraints.required_sections]
    texts += list(task.constraints.notes)
    return [ConstraintItem(text=text, provenance=provenance) for text in texts]


def source_pins(
    bundle: ResearchBundle | None, log: DecisionLog | None, step: StepInfo
) -> list[AuthoritativeInput]:
    """Each source pinned to the hash research read, moved on by each re-pin a person made.

    A re-pin moves the pin only from the hash it was recorded against, so a source research
    has read again since is pinned at what research read.
    """
    pins = []
    for source in bundle.sources if bundle else []:
        pin = AuthoritativeInput(
            name=f"source {source.id}",
            uri=source.uri,
            sha256=source.sha256,
            provenance=step.provenance(),
        )
        for item in log.decisions if log else []:
            for check in item.repins:
                moved = check.uri == pin.uri and check.recorded_sha256 == pin.sha256
                if moved and check.current_sha256:
                    pin = pin.model_copy(
                        update={"sha256": check.current_sha256, "provenance": item.provenance}
                    )
        pins.append(pin)
    return pins


def open_questions(bundle: ResearchBundle | None, log: DecisionLog | None) -> list[Question]:
    """Research's open questions, with the answers people gave.

    An answer follows its question when a revision moved it to another id, and goes with
    it when the revision dropped it.
    """
    answered: dict[str, tuple[str, Any]] = {}
    for item in log.decisions if log else []:
        if item.action == REVISE_ACTION and item.details and MOVED_QUESTIONS in item.details:
            moved = item.details[MOVED_QUESTIONS]
            assert isinstance(moved, dict)
            answered = {
                str(moved.get(old, old)): given
                for old, given in answered.items()
                if moved.get(old, old)
            }
        answered.update(
            {answer.question_id: (answer.text, item.provenance) for answer in item.answers}
        )
    return [
        question.model_copy(
            update={"answer": answered[question.id][0], "answered_by": answered[question.id][1]}
        )
        if question.id in answered
        else question
        for question in (bundle.open_questions if bundle else [])
    ]


def handed_artifacts(
    state: Mapping[str, Any], node: str, bundle: ResearchBundle | None
) -> list[ArtifactRef]:
    """Every artifact the state references, at the revision it pins (``bundle``: read).

    Besides research's, the draft's and the published article, every reference in any other
    channel (``refs_of``: a contract a project adds too), each revision once.
    """
    draft = read(state, "draft", DraftArticle, node=node)
    outcome = read(state, "outcome", RunOutcome, node=node)
    refs = list(bundle.artifact_refs) if bundle else []
    refs += [draft.body] if draft else []
    refs += [ref for _, ref in refs_of(state)]
    refs += [outcome.article] if outcome and outcome.article else []
    return list({(ref.artifact_id, ref.revision): ref for ref in refs}.values())


def derive_handoff(
    state: Mapping[str, Any],
    *,
    producer: StepInfo,
    next_node: str,
    receipts: list[ToolReceipt] | None = None,
    next_specs: Sequence[NodeSpec] = (),
) -> Handoff:
    """The envelope ``producer`` hands to ``next_node``, from the state it will read.

    ``next_specs`` are the declarations of the nodes that run next (several when a route
    starts branch nodes of several kinds): their tools and what they must meet, in order.
    """
    node = producer.node
    task = require(state, "task", TaskSpec, node=node)
    bundle = read(state, "research", ResearchBundle, node=node)
    log = read(state, "decisions", DecisionLog, node=node)
    decisions = log.decisions if log else []
    return Handoff(
        task_id=task.task_id,
        task_version=task.task_version,
        objective=task.objective,
        from_node=node,
        next_allowed_action=next_node,
        accepted_decisions=[
            Decision(text=item.summary(), provenance=item.provenance) for item in decisions
        ],
        constraints=task_constraints(task, producer)
        + [
            ConstraintItem(text=text, provenance=item.provenance)
            for item in decisions
            for text in item.constraints
        ],
        authoritative_inputs=source_pins(bundle, log, producer),
        artifacts=handed_artifacts(state, node, bundle),
        tool_receipts=list(receipts or []),
        allowed_tools=list(dict.fromkeys(t.name for spec in next_specs for t in spec.tools)),
        done_when=list(dict.fromkeys(text for spec in next_specs for text in spec.done_when)),
        open_questions=open_questions(bundle, log),
        granted_review_rounds=log.granted_review_rounds() if log else 0,
        provenance=producer.provenance(),
    )
