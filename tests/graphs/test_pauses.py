"""A pause declaration is checked when it is made, and decisions are checked against it."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from contracts import Contract
from graphs import WIRING
from graphs.decision_schema import decision_schema
from graphs.human import pause_request
from graphs.pauses import DECISION_FIELDS, Action, Pause, PauseDeclarationError
from graphs.ports import StepInfo
from graphs.wiring import compared_actions, pauses_of


class Colour(Contract):
    colour: str = Field(min_length=1, description="A colour.")


def test_the_fields_an_action_may_need_are_derived_from_the_decision_contract() -> None:
    assert DECISION_FIELDS == ("reason", "answers", "constraints", "details")


@pytest.mark.parametrize(
    ("declare", "problem"),
    [
        (lambda: Action("Edit-Titles"), "is not a snake_case name"),
        (lambda: Action("paint", needs=("colour",)), "'colour' is no decision field; expected"),
        (lambda: Pause("paint", (Action("a"), Action("a"))), "action names must be unique"),
        (lambda: Pause("Paint", (Action("a"),)), "kind must be snake_case"),
        (
            lambda: Pause("paint", (Action("approve"),), decision=Colour),
            "its decision contract Colour would never be given",
        ),
        (lambda: Pause("paint", (Action("a"),), request=dict), "request= takes a pydantic model"),
    ],
)
def test_a_declaration_no_decision_could_answer_is_refused_when_made(
    declare: object, problem: str
) -> None:
    with pytest.raises(PauseDeclarationError, match=problem):
        declare()  # type: ignore[operator]


def test_the_shipped_pauses_are_found_in_the_wiring_by_kind() -> None:
    pauses = pauses_of(WIRING)
    assert set(pauses) == {"approve_research", "review_exhausted", "stale_input", "confirm_write"}
    assert pauses["review_exhausted"].ids == "review-decision", "saved ids keep their form"
    assert pauses["approve_research"].action("reject").needs == ("reason",)


def test_a_decision_takes_only_what_its_action_declares() -> None:
    pause = Pause(
        "paint",
        (Action("keep"), Action("paint", needs=("details",)), Action("veto", needs=("reason",))),
        decision=Colour,
    )
    step = StepInfo(thread_id="t", node="paint", step=3, task_version=1)
    request = pause_request(pause, step, question="Paint it?")
    schema = decision_schema(request, pause)
    painted = schema.model_validate(
        {"interrupt_id": "paint-s3.t", "action": "paint", "details": {"colour": "ochre"}}
    )
    assert pause.details_of(painted.model_dump(mode="json")["details"]) == Colour(colour="ochre")
    for decision, problem in [
        ({"action": "paint", "details": {"colour": ""}}, "details.colour"),
        ({"action": "veto", "reason": "  "}, "reason is required when action is 'veto'"),
        ({"action": "keep", "constraints": ["at most 9 words"]}, "constraints goes with no"),
        ({"action": "keep", "details": {"colour": "red"}}, "details goes with action 'paint'"),
    ]:
        with pytest.raises(ValidationError, match=problem):
            schema.model_validate({"interrupt_id": "paint-s3.t", **decision})
    with pytest.raises(PauseDeclarationError, match="is from pause 'paint', not 'other'"):
        decision_schema(request, Pause("other", (Action("keep"),)))


def test_compared_actions_finds_every_literal_an_action_is_compared_with() -> None:
    def body(decision: object, last: object) -> bool:
        first = decision.action == "paint"  # type: ignore[attr-defined]
        second = "veto" != last.action  # type: ignore[attr-defined]
        third = decision.action in ("keep", "stay")  # type: ignore[attr-defined]
        return first and second and third and decision != "unrelated"

    assert [name for name, _ in compared_actions(body)] == ["paint", "veto", "keep", "stay"]
