"""A decision checked against the request it answers and the pause that asked it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from app.errors import (
    InvalidDecision,
)
from contracts import (
    HumanDecision,
    HumanRequest,
)
from graphs.boundary import describe_validation_error
from graphs.decision_schema import decision_schema
from graphs.human import as_decision
from graphs.pauses import Pause


def pause_of(request: HumanRequest, pauses: Mapping[str, Pause]) -> Pause:
    """The declared pause that made ``request``, or InvalidDecision if ``pauses`` lack it.

    A thread saved by a workflow with a pause this one no longer declares cannot be
    answered here: nothing would know which actions it allows.
    """
    pause = pauses.get(request.request_kind)
    if pause is None:
        declared = ", ".join(sorted(pauses)) or "none"
        raise InvalidDecision(
            f"invalid decision for {request.interrupt_id!r}: request_kind: pause "
            f"{request.request_kind!r} is not declared by this workflow (declared: {declared})"
        )
    return pause


def check_decision(
    request: HumanRequest, decision: Any, pauses: Mapping[str, Pause]
) -> HumanDecision:
    """Validate a decision against the open request and its pause, naming the field.

    ``request`` is the one saved with the pause (what the person was shown), which names
    its thread, so a decision naming another thread, or none, is refused. Which actions
    exist and what each needs is the pause's declaration.
    """
    schema = decision_schema(request, pause_of(request, pauses))
    try:
        return as_decision(schema.model_validate(plain_decision(decision)))
    except ValidationError as error:
        raise InvalidDecision(
            f"invalid decision for {request.interrupt_id!r}: {describe_validation_error(error)}"
        ) from error


def plain_decision(decision: Any) -> Any:
    """A decision as data: a model dumped as JSON would be, anything else as given."""
    if isinstance(decision, BaseModel):
        return decision.model_dump(mode="json")
    return decision
