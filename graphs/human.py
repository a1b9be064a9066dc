"""Human decision points: what is asked, which decisions are accepted, what they become.

A decision becomes contract data in the handoff envelope, with provenance 'human'.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import interrupt
from pydantic import ConfigDict, field_validator, model_validator

from contracts import (
    Answer,
    ConstraintItem,
    Decision,
    FactSummary,
    Handoff,
    HumanDecision,
    HumanRequest,
    Provenance,
    Question,
    ResearchBundle,
)
from graphs.ports import StepInfo

TOP_FACTS = 5


def approval_request(
    bundle: ResearchBundle, handoff: Handoff | None, step: StepInfo, objective: str
) -> HumanRequest:
    """What a person sees before writing starts: the evidence and the open questions."""
    open_questions = list(handoff.open_questions if handoff else bundle.open_questions)
    waiting = [question for question in open_questions if question.answer is None]
    question = f"Approve the research for: {objective}"
    if waiting:
        question += f" ({len(waiting)} open question(s) can be answered)"
    return HumanRequest(
        interrupt_id=f"approve-research-s{step.step}",
        request_kind="approve_research",
        question=question,
        allowed_actions=["approve", "revise", "reject"],
        fact_count=len(bundle.facts),
        source_count=len(bundle.sources),
        top_facts=[
            FactSummary(
                claim_id=fact.id,
                claim=fact.statement,
                source_id=fact.source_id,
                confidence=fact.confidence,
            )
            for fact in bundle.facts[:TOP_FACTS]
        ],
        open_questions=open_questions,
        artifacts=list(bundle.artifact_refs),
    )


def review_request(
    *, reason: str, draft_revision: int, handoff: Handoff | None, step: StepInfo
) -> HumanRequest:
    """What a person sees when review cannot approve within the budget."""
    return HumanRequest(
        interrupt_id=f"review-decision-s{step.step}",
        request_kind="review_exhausted",
        question=f"Draft revision {draft_revision} was not approved ({reason}). "
        "Accept it as a partial result, grant another review round, or abort?",
        allowed_actions=["accept_partial", "grant_round", "abort"],
        artifacts=list(handoff.artifacts if handoff else []),
    )


def decision_schema(request: HumanRequest) -> type[HumanDecision]:
    """A HumanDecision type that accepts only answers to *this* request.

    Given to ``interrupt(..., response_schema=...)`` so LangGraph refuses a wrong decision
    before it is stored (the thread stays waiting), wherever the resume comes from.
    """
    allowed = set(request.allowed_actions)
    question_ids = {question.id for question in request.open_questions}

    class DecisionForRequest(HumanDecision):
        model_config = ConfigDict(title="HumanDecision")

        @field_validator("interrupt_id")
        @classmethod
        def _this_request(cls, value: str) -> str:
            if value != request.interrupt_id:
                raise ValueError(
                    f"{value!r} does not match the open request {request.interrupt_id!r} "
                    "(it may be for another pause, or already answered)"
                )
            return value

        @field_validator("action")
        @classmethod
        def _allowed(cls, value: str) -> str:
            if value not in allowed:
                raise ValueError(
                    f"{value!r} is not allowed here; expected one of {', '.join(sorted(allowed))}"
                )
            return value

        @field_validator("answers")
        @classmethod
        def _known_questions(cls, value: list[Answer]) -> list[Answer]:
            for answer in value:
                if answer.question_id not in question_ids:
                    known = ", ".join(sorted(question_ids)) or "none"
                    raise ValueError(
                        f"{answer.question_id!r} is not an open question of this request "
                        f"(open: {known})"
                    )
            return value

        @model_validator(mode="after")
        def _extras_fit_action(self) -> DecisionForRequest:
            if (self.answers or self.constraints) and self.action not in ("revise", "approve"):
                raise ValueError(
                    f"answers and constraints go with action 'revise' or 'approve', "
                    f"not {self.action!r}"
                )
            return self

    DecisionForRequest.__name__ = "HumanDecision"
    return DecisionForRequest


def as_decision(value: Any) -> HumanDecision:
    """The plain contract of a validated decision (drops the request-bound subclass)."""
    if isinstance(value, HumanDecision):
        return HumanDecision.model_validate(value.model_dump())
    return HumanDecision.model_validate(value)


def apply_decision(handoff: Handoff, decision: HumanDecision, step: StepInfo) -> Handoff:
    """Record a decision in the envelope: decisions, constraints and answers by 'human'."""
    provenance = Provenance(producer="human", node=step.node, step=step.step)
    text = f"{decision.action} by {decision.decided_by}"
    if decision.reason:
        text += f": {decision.reason}"
    answers = {answer.question_id: answer.text for answer in decision.answers}
    questions = [
        question.model_copy(update={"answer": answers[question.id], "answered_by": provenance})
        if question.id in answers
        else question
        for question in handoff.open_questions
    ]
    return handoff.model_copy(
        update={
            "accepted_decisions": [
                *handoff.accepted_decisions,
                Decision(text=text, provenance=provenance),
            ],
            "constraints": [
                *handoff.constraints,
                *(
                    ConstraintItem(text=item, provenance=provenance)
                    for item in decision.constraints
                ),
            ],
            "open_questions": [Question.model_validate(q.model_dump()) for q in questions],
            "granted_review_rounds": handoff.granted_review_rounds
            + (1 if decision.action == "grant_round" else 0),
            "provenance": provenance,
        }
    )


def ask(request: HumanRequest, handoff: Handoff, step: StepInfo) -> tuple[HumanDecision, Handoff]:
    """Pause for a decision on ``request``; return it and the envelope that records it.

    The one ``interrupt()`` of the calling node: on resume LangGraph re-runs the node and
    this returns the validated decision instead of pausing.
    """
    value = interrupt(request.model_dump(mode="json"), response_schema=decision_schema(request))
    decision = as_decision(value)
    return decision, apply_decision(handoff, decision, step)
