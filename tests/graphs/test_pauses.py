"""A pause declaration is checked when it is made, and decisions are checked against it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args

import pytest
from pydantic import Field, ValidationError
from typing_extensions import TypedDict

from app.errors import InvalidDecision
from app.settings import Settings
from app.workflow import Workflow
from contracts import Contract, DecisionLog, HumanDecision, TaskSpec, TaskState, VersionedContract
from graphs import WIRING, get_step_info, node
from graphs.decision_schema import decision_schema
from graphs.human import ask, pause_request, recorded
from graphs.pauses import DECISION_FIELDS, Action, Pause, PauseDeclarationError
from graphs.ports import StepInfo
from graphs.routing import STOP
from graphs.wiring import pauses_of
from tests.graphs.test_declare import CountInput as SortInput


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
    declared = {spec.pauses.kind for spec, _ in WIRING if spec.pauses is not None}
    assert set(pauses) == declared, "every pause a node of the wiring declares"
    assert set(pauses) >= {"approve_research", "review_exhausted", "stale_input", "confirm_write"}
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


Painting = Literal["keep", "paint"]


def test_a_literal_naming_other_actions_than_the_pause_fails_at_import_naming_both() -> None:
    with pytest.raises(
        PauseDeclarationError,
        match=r"pause 'paint': its Literal names keep, paint but its actions are keep, veto; "
        r"both must name the same actions",
    ):
        Pause("paint", (Action("keep"), Action("veto")), literal=Painting)
    with pytest.raises(PauseDeclarationError, match=r"its Literal names keep, paint but its act"):
        Pause("paint", (Action("keep"),), literal=Painting)  # "paint" could never be chosen
    with pytest.raises(PauseDeclarationError, match=r"literal= takes the Literal of its action"):
        Pause("paint", (Action("keep"), Action("paint")), literal=str)


def test_chosen_is_the_decisions_action_and_refuses_another_pauses_decision() -> None:
    painting: Pause[Painting] = Pause(
        "paint", (Action("keep"), Action("paint")), literal=Literal["paint", "keep"]
    )
    decision = HumanDecision(interrupt_id="paint-s3.t", action="paint")
    assert painting.chosen(decision) == "paint"
    with pytest.raises(PauseDeclarationError, match=r"pause 'paint' has no action 'approve'"):
        painting.chosen(decision.model_copy(update={"action": "approve"}))


def test_the_shipped_pauses_type_their_actions_with_their_literal() -> None:
    typed = {kind: pause for kind, pause in pauses_of(WIRING).items() if pause.literal}
    assert set(typed) >= {"approve_research", "review_exhausted", "stale_input"}
    for pause in typed.values():
        assert get_args(pause.literal) == pause.names, pause.kind


def test_a_request_that_may_expire_takes_the_action_ignore_picks_and_one_without_is_refused() -> (
    None
):
    made = datetime(2030, 1, 1, tzinfo=UTC)
    step = StepInfo("t", "n", 3, 1, begun_at=made, decision_timeout=timedelta(hours=24))
    safe = Pause("sign_off", actions=(Action("sign"), Action("refuse", inbox=("ignore",))))
    request = pause_request(safe, step, question="Sign?")
    assert request.expires_at == made + timedelta(hours=24)
    assert safe.on_expiry(request.allowed_actions).name == "refuse"
    unsafe = Pause("sign_off", actions=(Action("sign"), Action("refuse")))
    assert (
        pause_request(unsafe, replace(step, decision_timeout=None), question="Sign?").expires_at
        is None
    )
    with pytest.raises(PauseDeclarationError, match="no safe default for an expired request"):
        pause_request(unsafe, step, question="Sign?")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("24h", timedelta(hours=24)),
        ("1h30m", timedelta(minutes=90)),
        ("PT2H", timedelta(hours=2)),
        (3600, timedelta(hours=1)),
    ],
)
def test_a_decision_timeout_is_read_as_people_write_it(typed: object, meant: timedelta) -> None:
    task = TaskSpec(objective="Explain it", policies={"decision_timeout": typed})
    assert task.policies.decision_timeout == meant


@pytest.mark.parametrize("typed", ["soon", "0s", "400d", -1])
def test_a_decision_timeout_that_is_no_span_is_refused_naming_the_field(typed: object) -> None:
    with pytest.raises(ValidationError, match=r"policies\.decision_timeout"):
        TaskSpec(objective="Explain it", policies={"decision_timeout": typed})


class SortOrder(Contract):
    descending: bool = Field(description="Largest first.")


class Trim(Contract):
    keep: int = Field(ge=1, description="How many words to keep.")


Sorting = Literal["sort", "trim", "skip"]
SORT: Pause[Sorting] = Pause(
    "sort_words",
    actions=(
        Action("sort", needs=("details",), details=SortOrder),
        Action("trim", needs=("details",), details=Trim),
        Action("skip", needs=("reason",)),
    ),
    literal=Sorting,
)


def test_each_action_may_declare_its_own_details_contract_and_is_checked_against_it() -> None:
    step = StepInfo(thread_id="t", node="sort_words", step=2, task_version=1)
    request = pause_request(SORT, step, question="Sort the words?")
    schema = decision_schema(request, SORT)
    trimmed = schema.model_validate(
        {"interrupt_id": request.interrupt_id, "action": "trim", "details": {"keep": 2}}
    )
    assert isinstance(trimmed.details, Trim), "the action's own contract, not the first one"
    assert SORT.details_of({"keep": 2}, "trim") == Trim(keep=2)
    assert SORT.details_of({"descending": True}, "sort") == SortOrder(descending=True)
    with pytest.raises(ValidationError, match=r"details: action 'trim' gives a Trim: details\."):
        schema.model_validate(
            {"interrupt_id": request.interrupt_id, "action": "trim", "details": {"descending": 1}}
        )
    described = schema.model_json_schema()
    assert {"SortOrder", "Trim"} <= set(described["$defs"]), "the resume schema types both"
    assert "Trim with action trim" in described["properties"]["details"]["description"]


@pytest.mark.parametrize(
    ("declare", "problem"),
    [
        (
            lambda: Action("trim", details=Trim),
            "its details contract Trim would never be given: add 'details' to its needs=",
        ),
        (lambda: Action("trim", needs=("details",), details=dict), "details= takes a pydantic"),
        (
            lambda: Pause(
                "p", (Action("trim", needs=("details",), details=Trim),), decision=Colour
            ),
            "its decision contract Colour would never be given",
        ),
        (
            lambda: Pause("p", (Action("a", needs=("details",)), Action("b", takes=("details",)))),
            r"actions \['a', 'b'\] take details, but the pause declares no decision contract",
        ),
    ],
)
def test_an_action_contract_no_decision_could_give_is_refused_when_declared(
    declare: object, problem: str
) -> None:
    with pytest.raises(PauseDeclarationError, match=problem):
        declare()  # type: ignore[operator]


class WordOrder(VersionedContract):
    """The objective's words, as a person chose to have them."""

    kind: Literal["word_order"] = Field(default="word_order", description="Discriminator.")
    words: list[str] = Field(description="The words kept, in order.")

    EXAMPLES = [{"words": ["a", "b"]}]


class SortOutput(TypedDict, total=False):
    decisions: DecisionLog | None
    order: WordOrder | None


@node("sort_words", reads=SortInput, writes=SortOutput, pauses=SORT, terminal=True)
def sort_words(state: SortInput) -> SortOutput:
    """Asks how to order the objective's words; each answer gives data of its own."""
    step = get_step_info()
    request = pause_request(SORT, step, question="How should the words be kept?")
    decision = ask(SORT, request)
    log = recorded(state["decisions"], decision, request, step)
    words = state["task"].objective.split()
    chosen = SORT.chosen(decision)
    if chosen == "skip":
        return {"decisions": log}
    details = SORT.details_of(decision.details, chosen)
    if isinstance(details, SortOrder):
        words = sorted(words, reverse=details.descending)
    elif isinstance(details, Trim):
        words = words[: details.keep]
    return {"decisions": log, "order": WordOrder(words=words)}


def test_a_decision_resumes_with_its_own_actions_details_and_another_actions_are_refused(
    settings: Settings,
) -> None:
    with Workflow(settings, wiring=((sort_words, STOP),)) as workflow:
        outcome = workflow.run("delta alpha charlie bravo", "t-sort")
        request = outcome.human_request
        assert outcome.state == TaskState.INPUT_REQUIRED and request is not None
        wrong = {"interrupt_id": request.interrupt_id, "action": "trim"}
        with pytest.raises(InvalidDecision, match=r"details: action 'trim' gives a Trim"):
            workflow.resume("t-sort", {**wrong, "details": {"descending": True}})
        assert workflow.pending("t-sort") == request, "the thread still waits, unchanged"

        workflow.resume("t-sort", {**wrong, "details": {"keep": 2}})
        values = workflow.graph.get_state(workflow.config("t-sort")).values
        assert values["order"] == WordOrder(words=["delta", "alpha"])
        assert values["decisions"].last().details == {"keep": 2}
