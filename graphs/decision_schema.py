"""Which decisions a request accepts: a typed HumanDecision made from the request and its pause.

LangGraph is given the type as ``interrupt(..., response_schema=...)`` and refuses a wrong
decision before it is stored; the Python API and the CLI check a decision against the same
type before they resume, so every way in refuses the same decisions with the same words.
"""

from __future__ import annotations

import functools
import json
import operator
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from contracts import Answer, HumanDecision, HumanRequest
from graphs.boundary import describe_validation_error
from graphs.pauses import DECISION_FIELDS, INBOX_RESPONSES, Pause, PauseDeclarationError

THREAD_MARK = "."
"""Separates a request's pause (``approve-research-s3``) from its thread in an interrupt id."""
IGNORED = "ignored in the inbox"
"""The reason an Agent Inbox ``ignore`` gives an action that needs one."""


def decision_schema(request: HumanRequest, pause: Pause) -> type[HumanDecision]:
    """A HumanDecision type that accepts only answers to *this* request of ``pause``.

    Given to ``interrupt(..., response_schema=...)`` so LangGraph refuses a wrong decision
    before it is stored (the thread stays waiting), wherever the resume comes from; its
    JSON Schema types ``details`` as the pause's decision contract. Building a pydantic
    class costs milliseconds and every resume (and every re-run of a waiting node) asks
    for one, so the class is kept per request and pause, keyed by the request's content.
    """
    if request.request_kind != pause.kind:
        raise PauseDeclarationError(
            f"request {request.interrupt_id!r} is from pause {request.request_kind!r}, "
            f"not {pause.kind!r}"
        )
    return _decision_schema(request.model_dump_json(), pause)


@functools.lru_cache(maxsize=128)
def _decision_schema(request_json: str, pause: Pause) -> type[HumanDecision]:
    request = HumanRequest.model_validate_json(request_json)
    allowed = [name for name in request.allowed_actions if name in pause.names]
    question_ids = {question.id for question in request.open_questions}

    class DecisionForRequest(HumanDecision):
        model_config = ConfigDict(title="HumanDecision")

        @model_validator(mode="before")
        @classmethod
        def _from_inbox(cls, data: Any) -> Any:
            return from_inbox(data, request, pause)

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
        def _fields_fit_action(self) -> DecisionForRequest:
            action = pause.action(self.action)
            for field in DECISION_FIELDS:
                given = getattr(self, field)
                if isinstance(given, str):
                    given = given.strip()
                if field in action.needs and not given:
                    raise ValueError(f"{field} is required when action is {action.name!r}")
                if given and not action.allows(field):
                    takers = " or ".join(
                        repr(name) for name in pause.takers(field) if name in allowed
                    )
                    raise ValueError(
                        f"{field} goes with action {takers}, not {action.name!r}"
                        if takers
                        else f"{field} goes with no action of this request, not {action.name!r}"
                    )
            given = self.details
            contract = pause.details_contract(action.name)
            if given is not None and contract is not None and not isinstance(given, contract):
                try:  # the union of the pause's contracts took it as another action's
                    checked = contract.model_validate(
                        given.model_dump() if isinstance(given, BaseModel) else given
                    )
                except ValidationError as error:
                    raise ValueError(
                        f"details: action {action.name!r} gives a {contract.__name__}: "
                        f"{describe_validation_error(error, 'details')}"
                    ) from None
                object.__setattr__(self, "details", checked)  # no re-run of these checks
            return self

    DecisionForRequest.__name__ = "HumanDecision"
    contracts = pause.details_contracts()
    if not contracts:
        return DecisionForRequest
    details: Any = functools.reduce(operator.or_, contracts, type(None))
    given_with = "; ".join(
        f"{contract.__name__} with action {' or '.join(actions)}"
        for contract, actions in contracts.items()
    )
    typed = create_model(
        "HumanDecision",
        __base__=DecisionForRequest,
        details=(
            details,
            Field(default=None, description=f"This pause's own decision fields: {given_with}."),
        ),
    )
    return typed


def from_inbox(data: Any, request: HumanRequest, pause: Pause) -> Any:
    """An Agent Inbox ``HumanResponse`` (or a list of one) as the decision it stands for.

    Which action each response chooses is the pause's declaration (``Action.inbox``); what
    it gives is then checked as any decision is. A response answers the request it was
    sent to, so it names no interrupt id; anything else is passed on as it is.
    """
    response = data[0] if isinstance(data, list) and len(data) == 1 else data
    if not isinstance(response, dict) or "type" not in response or "interrupt_id" in response:
        return data
    kind, args = response.get("type"), response.get("args")
    offered = pause.responses(request.allowed_actions)
    if kind not in INBOX_RESPONSES:
        raise ValueError(
            f"type: {kind!r} is no Agent Inbox response; expected one of {', '.join(offered)}"
        )
    action = offered.get(kind)
    if action is None:
        raise ValueError(
            f"type: {kind!r} is not offered by this request; offered: {', '.join(offered)}"
        )
    decision: dict[str, Any] = {"interrupt_id": request.interrupt_id, "action": action.name}
    if kind in ("accept", "ignore"):
        if args is not None:
            raise ValueError(f"args: {kind!r} takes none (null), got {type(args).__name__}")
        if kind == "ignore" and "reason" in action.needs:
            decision["reason"] = IGNORED
    elif kind == "response":
        if not isinstance(args, str) or not args.strip():
            raise ValueError("args: a 'response' gives its text as a non-empty string")
        decision[action.text_as] = [args] if action.text_as == "constraints" else args
    else:
        edited = args.get("args") if isinstance(args, dict) else None
        if not isinstance(edited, dict):
            raise ValueError(
                "args: an 'edit' gives {'action': ..., 'args': {decision fields}}; got "
                f"{type(args).__name__}"
            )
        unknown = sorted(set(edited) - set(DECISION_FIELDS))
        if unknown:
            raise ValueError(
                f"args.args: {', '.join(map(repr, unknown))} is no decision field; expected "
                f"{', '.join(field for field in DECISION_FIELDS if action.allows(field))}"
            )
        decision.update({field: _typed(field, value) for field, value in edited.items()})
    return decision


def _typed(field: str, value: Any) -> Any:
    """An edited argument as its field's value: Agent Inbox edits each as text.

    So a list or an object comes back as its JSON, and a constraint perhaps as plain
    prose; anything else is left for the field's own check to name.
    """
    if not isinstance(value, str) or field == "reason":
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return [value] if field == "constraints" and value.strip() else value


def _wrong_request(value: str, request: HumanRequest) -> str:
    """Why ``value`` does not answer ``request``: another thread, no thread, or another pause."""
    pause, _, token = value.partition(THREAD_MARK)
    own_pause, _, own_token = request.interrupt_id.partition(THREAD_MARK)
    if token and token != own_token:
        return (
            f"{value!r} is a decision for thread {token!r}, not for this thread "
            f"{request.thread_id!r}, whose open request is {request.interrupt_id!r}"
        )
    if not token and pause == own_pause:
        return (
            f"{value!r} names no thread; this thread's open request is {request.interrupt_id!r} "
            "(a decision answers one thread only)"
        )
    return (
        f"{value!r} does not match the open request {request.interrupt_id!r} "
        "(it may be for another pause, or already answered)"
    )
