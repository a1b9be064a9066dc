"""Human decision points: what is asked, which decisions are accepted, what they become.

A decision becomes contract data in the handoff envelope, with provenance 'human'.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

from langgraph.types import interrupt
from pydantic import ConfigDict, field_validator, model_validator

from contracts import (
    Answer,
    DecisionLog,
    FactSummary,
    Handoff,
    HumanDecision,
    HumanRequest,
    Provenance,
    RecordedDecision,
    RefCheck,
    ResearchBundle,
)
from graphs.ports import StepInfo

TOP_FACTS = 5
OBJECTIVE_SHOWN = 1000
"""Characters of the objective quoted in an approval question (the request holds 2000)."""
THREAD_MARK = "."
"""Separates a request's pause (``approve-research-s2``) from its thread in an interrupt id."""
_PLAIN_THREAD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")


def thread_token(thread_id: str) -> str:
    """How an interrupt id names its thread: the id itself, or a digest of an unusual one.

    Thread ids of the CLI and the Python API, and LangGraph server UUIDs, are kept as they
    are, so a person can read which thread a decision is for.
    """
    if _PLAIN_THREAD.match(thread_id):
        return thread_id
    return "h" + hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def bound_id(pause: str, thread_id: str) -> str:
    """The interrupt id of ``pause`` (e.g. ``approve-research-s2``) on one thread."""
    return f"{pause}{THREAD_MARK}{thread_token(thread_id)}"


def as_asked_on(decision: HumanDecision, request: HumanRequest, thread_id: str) -> HumanDecision:
    """The decision as the graph will check it when the node re-runs on ``thread_id``.

    A request saved before requests named their thread was answered with its unbound id;
    the re-running node asks the same pause bound to its thread, so the answer (already
    checked against what the person was shown) is addressed to that. Others pass unchanged.
    """
    if request.thread_id is not None or decision.interrupt_id != request.interrupt_id:
        return decision
    return decision.model_copy(update={"interrupt_id": bound_id(request.interrupt_id, thread_id)})


def approval_request(
    bundle: ResearchBundle, handoff: Handoff | None, step: StepInfo, objective: str
) -> HumanRequest:
    """What a person sees before writing starts: the evidence and the open questions."""
    open_questions = list(handoff.open_questions if handoff else bundle.open_questions)
    waiting = [question for question in open_questions if question.answer is None]
    shown = objective if len(objective) <= OBJECTIVE_SHOWN else objective[:OBJECTIVE_SHOWN] + "…"
    question = f"Approve the research for: {shown}"
    if waiting:
        question += f" ({len(waiting)} open question(s) can be answered)"
    return HumanRequest(
        interrupt_id=bound_id(f"approve-research-s{step.step}", step.thread_id),
        thread_id=step.thread_id,
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
        interrupt_id=bound_id(f"review-decision-s{step.step}", step.thread_id),
        thread_id=step.thread_id,
        request_kind="review_exhausted",
        question=f"Draft revision {draft_revision} was not approved ({reason}). "
        "Accept it as a partial result, grant another review round, or abort?",
        allowed_actions=["accept_partial", "grant_round", "abort"],
        artifacts=list(handoff.artifacts if handoff else []),
    )


def decision_schema(request: HumanRequest) -> type[HumanDecision]:
    """A HumanDecision type that accepts only answers to *this* request.

    Given to ``interrupt(..., response_schema=...)`` so LangGraph refuses a wrong decision
    before it is stored (the thread stays waiting), wherever the resume comes from. Building
    a pydantic class costs milliseconds and every resume (and every re-run of a waiting
    node) asks for one, so the class is kept per request, keyed by the request's content.
    """
    return _decision_schema(request.model_dump_json())


@functools.lru_cache(maxsize=128)
def _decision_schema(request_json: str) -> type[HumanDecision]:
    request = HumanRequest.model_validate_json(request_json)
    allowed = set(request.allowed_actions)
    question_ids = {question.id for question in request.open_questions}

    class DecisionForRequest(HumanDecision):
        model_config = ConfigDict(title="HumanDecision")

        @field_validator("interrupt_id")
        @classmethod
        def _this_request(cls, value: str) -> str:
            if value != request.interrupt_id:
                raise ValueError(_wrong_request(value, request))
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


def _wrong_request(value: str, request: HumanRequest) -> str:
    """Why ``value`` does not answer ``request``: another thread, no thread, or another pause."""
    pause, _, token = value.partition(THREAD_MARK)
    own_pause, _, own_token = request.interrupt_id.partition(THREAD_MARK)
    if request.thread_id is not None and token and token != own_token:
        return (
            f"{value!r} is a decision for thread {token!r}, not for this thread "
            f"{request.thread_id!r}, whose open request is {request.interrupt_id!r}"
        )
    if request.thread_id is not None and not token and pause == own_pause:
        return (
            f"{value!r} names no thread; this thread's open request is {request.interrupt_id!r} "
            "(a decision answers one thread only)"
        )
    return (
        f"{value!r} does not match the open request {request.interrupt_id!r} "
        "(it may be for another pause, or already answered)"
    )


def as_decision(value: Any) -> HumanDecision:
    """The plain contract of a validated decision (drops the request-bound subclass)."""
    if isinstance(value, HumanDecision):
        return HumanDecision.model_validate(value.model_dump())
    return HumanDecision.model_validate(value)


def record(
    decision: HumanDecision,
    request: HumanRequest,
    step: StepInfo,
    repins: list[RefCheck] | None = None,
) -> RecordedDecision:
    """A decision as the thread keeps it: answers, constraints and re-pins by 'human'."""
    return RecordedDecision(
        interrupt_id=decision.interrupt_id,
        request_kind=request.request_kind,
        action=decision.action,
        reason=decision.reason,
        decided_by=decision.decided_by,
        answers=list(decision.answers),
        constraints=list(decision.constraints),
        repins=list(repins or []),
        provenance=Provenance(producer="human", node=step.node, step=step.step),
    )


def ask(request: HumanRequest) -> HumanDecision:
    """Pause for a decision on ``request`` and return it, validated against the request.

    The one ``interrupt()`` of the calling node: on resume LangGraph re-runs the node and
    this returns the validated decision instead of pausing.
    """
    value = interrupt(request.model_dump(mode="json"), response_schema=decision_schema(request))
    return as_decision(value)


def recorded(
    log: DecisionLog | None,
    decision: HumanDecision,
    request: HumanRequest,
    step: StepInfo,
    repins: list[RefCheck] | None = None,
) -> DecisionLog:
    """The thread's decision log with this decision added."""
    return (log or DecisionLog(decisions=[])).with_decision(record(decision, request, step, repins))
