"""Human decision points: what is asked, which decisions are accepted, what they become.

What a pause allows is its declaration's (``graphs.pauses.Pause``); here a request is made
from it, and a decision is checked against the request and its pause. A decision becomes
contract data in the handoff envelope, with provenance 'human'.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.runtime import get_runtime
from langgraph.types import interrupt
from pydantic import (
    BaseModel,
    TypeAdapter,
)

from contracts import (
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
from graphs.context import RunContext
from graphs.decision_schema import THREAD_MARK, decision_schema
from graphs.pauses import ASKING, Pause, PauseDeclarationError
from graphs.ports import StepInfo

TOP_FACTS = 5
EXPIRED = "policy: expired"
"""Who decided, on a decision an expired request was answered with (``decided_by``)."""
OBJECTIVE_SHOWN = 1000
"""Characters of the objective quoted in an approval question (the request holds 2000)."""
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
    """The interrupt id of ``pause`` (e.g. ``approve-research-s3``) on one thread."""
    return f"{pause}{THREAD_MARK}{thread_token(thread_id)}"


def pause_request(
    pause: Pause,
    step: StepInfo,
    *,
    question: str,
    allowed: Sequence[str] | None = None,
    details: BaseModel | None = None,
    **shown: Any,
) -> HumanRequest:
    """The request ``pause`` puts to a person at ``step``: every declared action, or ``allowed``.

    ``details`` is what this pause alone shows, an instance of its declared request
    contract; ``shown`` fills the fields every request has (facts, questions, artifacts).
    """
    actions = list(allowed) if allowed is not None else list(pause.names)
    for name in actions:
        pause.action(name)  # an action the pause does not declare could never be answered
    if (details is None) != (pause.request is None):
        raise PauseDeclarationError(
            f"pause {pause.kind!r} declares no request contract, so it shows no details"
            if pause.request is None
            else f"pause {pause.kind!r} shows its {pause.request.__name__}: give details="
        )
    if details is not None and pause.request is not None:
        details = pause.request.model_validate(details)
    expires_at = None
    if step.begun_at is not None and step.decision_timeout is not None:
        pause.on_expiry(actions)  # a request that may expire needs a default to expire to
        expires_at = step.begun_at + step.decision_timeout
    return HumanRequest(
        interrupt_id=bound_id(f"{pause.ids}-s{step.step}", step.thread_id),
        thread_id=step.thread_id,
        request_kind=pause.kind,
        question=question,
        allowed_actions=actions,
        details=details.model_dump(mode="json") if details is not None else None,
        expires_at=expires_at,
        **shown,
    )


def approval_request(
    pause: Pause, bundle: ResearchBundle, handoff: Handoff | None, step: StepInfo, objective: str
) -> HumanRequest:
    """What a person sees before writing starts: the evidence and the open questions."""
    open_questions = list(handoff.open_questions if handoff else bundle.open_questions)
    waiting = [question for question in open_questions if question.answer is None]
    shown = objective if len(objective) <= OBJECTIVE_SHOWN else objective[:OBJECTIVE_SHOWN] + "…"
    question = f"Approve the research for: {shown}"
    if waiting:
        question += f" ({len(waiting)} open question(s) can be answered)"
    return pause_request(
        pause,
        step,
        question=question,
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
    pause: Pause, *, reason: str, draft_revision: int, handoff: Handoff | None, step: StepInfo
) -> HumanRequest:
    """What a person sees when review cannot approve within the budget."""
    return pause_request(
        pause,
        step,
        question=f"Draft revision {draft_revision} was not approved ({reason}). "
        "Accept it as a partial result, grant another review round, or abort?",
        artifacts=list(handoff.artifacts if handoff else []),
    )


def as_decision(value: Any) -> HumanDecision:
    """The plain contract of a validated decision (drops the request-bound subclass)."""
    if isinstance(value, HumanDecision):
        return HumanDecision.model_validate(value.model_dump(mode="json"))
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
        details=decision.details,
        provenance=Provenance(producer="human", node=step.node, step=step.step),
    )


def ask(pause: Pause, request: HumanRequest) -> HumanDecision:
    """Pause for a decision on ``request`` and return it, validated against it and ``pause``.

    The one ``interrupt()`` of the calling node: on resume LangGraph re-runs the node and
    this returns the validated decision instead of pausing. A decision is accepted once:
    a served client's resume is checked here (LangGraph refuses it and the thread keeps
    waiting), while ``Workflow.resume`` checks at its door, before the node re-runs, and says
    so in the run context (``RunContext.admitted``), so its decision is not checked again.
    Either way the request's schema is what a paused thread shows its clients.

    A decision the node then failed on (audited by the runner, ``decision_mark``) is not
    returned again: LangGraph replays it, this skips it and asks anew, the request listing
    why each earlier decision failed (``changes``). An expired request asked anew no longer
    expires: its default is what failed, so a person decides.
    """
    running = ASKING.get()
    if running is not None and (running[1] is None or running[1].kind != pause.kind):
        node, declared = running
        raise PauseDeclarationError(
            f"node {node!r} asks through pause {pause.kind!r}, which it does not declare "
            f"(it declares {declared.kind if declared else 'none'!r}): no way in could answer "
            "it; a node asks through the one pause it declares (pauses=...), so a second "
            "question is an action of that pause, or a node of its own after this one"
        )
    failures = failed_on(request)
    if failures:  # the decisions that made this node fail: replayed by LangGraph, never used
        changes = [*request.changes, *failures]
        if has_expired(request, _now()):  # its default failed: answering with it again would
            default = pause.on_expiry(request.allowed_actions).name  # fail on every resume
            changes.append(f"its default, {default}, failed this step: a person decides")
            request = request.model_copy(update={"expires_at": None})
        request = request.model_copy(update={"changes": changes})
        for _ in failures:
            _interrupt(pause, request)
    decision = as_decision(_interrupt(pause, request))
    if has_expired(request, _now()):
        decision = expired_decision(request, pause)
    answered = ANSWERED.get()
    if answered is not None:
        answered.pause, answered.request, answered.decision = pause, request, decision
    return decision


def _interrupt(pause: Pause, request: HumanRequest) -> Any:
    """One ``interrupt()`` for ``request``: the decision LangGraph resumes it with."""
    schema = decision_schema(request, pause)
    shown = [{**inbox_view(request, pause), "request": request.model_dump(mode="json")}]
    if _admitted(request):
        return interrupt(shown, response_schema=_surfaced(schema))
    return interrupt(shown, response_schema=schema)


@dataclass
class Answered:
    """What a pausing node's attempt asked and was answered (``ask`` fills it in)."""

    pause: Pause | None = None
    request: HumanRequest | None = None
    decision: HumanDecision | None = None


ANSWERED: ContextVar[Answered | None] = ContextVar("handoff_answered", default=None)
"""Set by the node runner around a pausing node's attempt: a decision the node then fails
on is audited as that decision's failure (``decision_mark``), and asked again."""


def decision_mark(request: HumanRequest) -> str:
    """How a failed attempt's audit row names the request whose decision made it fail.

    An entry of the row's ``inputs`` (``decision:<digest>``): the request's interrupt id
    names its pause, thread and step, so a later visit of the node asks afresh.
    """
    return "decision:" + hashlib.sha256(request.interrupt_id.encode()).hexdigest()[:12]


def failed_on(request: HumanRequest) -> list[str]:
    """Why each decision already given on ``request`` failed its node, oldest first.

    LangGraph keeps every value a task's ``interrupt()`` calls were resumed with and
    replays them in order when the task runs again: a decision the node failed on would be
    replayed, and fail, on every resume. The audit says how many there were; ``ask`` lets
    each be replayed and asks for the next, so the thread can be decided again.
    """
    context = get_runtime().context
    if not isinstance(context, RunContext):
        return []
    mark = decision_mark(request)
    return [
        f"a decision failed this step: {run.error.detail if run.error else 'no detail'}"[:1000]
        for run in context.ledger.runs(request.thread_id)
        if run.status == "failed" and mark in run.inputs
    ]


def has_expired(request: HumanRequest, now: datetime) -> bool:
    """Whether ``request`` can no longer be answered by a person at ``now``."""
    return request.expires_at is not None and now >= request.expires_at


def expired_decision(request: HumanRequest, pause: Pause) -> HumanDecision:
    """What an expired request is answered with, whoever resumes it: the pause's safe default.

    Every way in resumes through the pause's ``ask``, which returns this in place of any
    decision that came too late; the thread's lock lets only one of them record it.
    """
    action = pause.on_expiry(request.allowed_actions)
    expired_at = request.expires_at or _now()
    return HumanDecision(
        interrupt_id=request.interrupt_id,
        action=action.name,
        reason=f"no decision before the request expired at {expired_at:%Y-%m-%d %H:%M:%S} UTC",
        decided_by=EXPIRED,
    )


def inbox_view(request: HumanRequest, pause: Pause) -> dict[str, Any]:
    """The request as LangGraph's Agent Inbox shows it: a ``HumanInterrupt``.

    Derived from the typed request, which the interrupt carries beside it (``request``):
    what is asked and shown as markdown, the responses the pause maps to actions this
    request allows, and for an ``edit`` the decision fields it may give.
    """
    offered = pause.responses(request.allowed_actions)
    editing = offered.get("edit")
    args: dict[str, Any] = {}
    if editing is not None:
        args = {field: [] for field in ("answers", "constraints") if editing.allows(field)}
        if editing.allows("details"):
            args["details"] = {}
    return {
        "action_request": {"action": request.request_kind, "args": args},
        "config": {
            "allow_ignore": "ignore" in offered,
            "allow_respond": "response" in offered,
            "allow_edit": "edit" in offered,
            "allow_accept": "accept" in offered,
        },
        "description": described(request),
    }


def described(request: HumanRequest) -> str:
    """A request in markdown: the question, the leading facts cited, what is open, the evidence."""
    lines = [f"**{request.question}**"]
    if request.fact_count or request.source_count:
        lines += ["", f"{request.fact_count} facts from {request.source_count} sources."]
    facts = [
        f"{fact.claim} [{fact.claim_id}: {fact.source_id}, {fact.confidence}]"
        for fact in request.top_facts
    ]
    questions = [
        f"{question.id}: {question.text}"
        + (f" (answered: {question.answer})" if question.answer else "")
        for question in request.open_questions
    ]
    evidence = [
        f"`{ref.uri}` revision {ref.revision} (sha256 {ref.sha256[:12]})"
        for ref in request.artifacts
    ]
    lines += _listed("Leading facts:", facts)
    lines += _listed("Open questions (answer with their ids):", questions)
    lines += _listed("What changed:", request.changes)
    lines += _listed("Evidence:", evidence)
    if request.details:
        lines += ["", "Details:", "```json", json.dumps(request.details, indent=2), "```"]
    lines += ["", f"Actions: {', '.join(request.allowed_actions)} (`{request.interrupt_id}`)"]
    if request.expires_at is not None:
        lines += ["", f"Expires at {request.expires_at:%Y-%m-%d %H:%M:%S} UTC."]
    return "\n".join(lines)


def _listed(title: str, items: Sequence[str]) -> list[str]:
    return ["", title, *(f"- {item}" for item in items)] if items else []


def request_in(value: Any) -> HumanRequest:
    """The typed request an interrupt carries.

    Beside its Agent Inbox view (a list of one), or as the whole value: a thread paused
    before the view existed.
    """
    if isinstance(value, list) and value and isinstance(value[0], dict) and "request" in value[0]:
        return HumanRequest.model_validate(value[0]["request"])
    return HumanRequest.model_validate(value)


def _now() -> datetime:
    """The run's clock (a test's own, through the run context), else the system's."""
    context = get_runtime().context
    return context.clock() if isinstance(context, RunContext) else datetime.now(UTC)


def _admitted(request: HumanRequest) -> bool:
    """Whether this run's caller already checked the decision it resumes ``request`` with."""
    context = get_runtime().context
    return isinstance(context, RunContext) and context.admitted == request


@functools.lru_cache(maxsize=128)
def _surfaced(schema: type[HumanDecision]) -> dict[str, Any]:
    """The JSON Schema ``interrupt`` shows for ``schema``; given as such, it checks nothing."""
    return TypeAdapter(schema).json_schema()


def recorded(
    log: DecisionLog | None,
    decision: HumanDecision,
    request: HumanRequest,
    step: StepInfo,
    repins: list[RefCheck] | None = None,
) -> DecisionLog:
    """The thread's decision log with this decision added."""
    return (log or DecisionLog(decisions=[])).with_decision(record(decision, request, step, repins))
