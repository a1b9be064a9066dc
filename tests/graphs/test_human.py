"""A request as Agent Inbox shows it, and Agent Inbox responses as the decisions they stand for.

What each response chooses is the pause's declaration (``Action.inbox``); the expectations
here are read from it, not from a list of this graph's pauses.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langgraph.errors import is_invalid_resume
from langgraph.types import Command
from pydantic import ValidationError

from app.errors import InvalidDecision
from app.workflow import Workflow
from contracts import HumanRequest, TaskState
from graphs.decision_schema import IGNORED
from graphs.human import request_in
from graphs.nodes.approve_research import APPROVAL
from graphs.pauses import INBOX_RESPONSES, Action, Pause, PauseDeclarationError
from tests.conftest import OBJECTIVE

QUESTIONS = ["Who found the Rosetta Stone in 1799?"]
CONSTRAINT = "Mention Thomas Young's earlier work."
ALLOWS = {"accept": "allow_accept", "edit": "allow_edit", "response": "allow_respond"}


def paused(workflow: Workflow, thread_id: str) -> HumanRequest:
    task = workflow.task(OBJECTIVE, questions=QUESTIONS, policies={"require_approval": True})
    outcome = workflow.run(task, thread_id)
    assert outcome.state == TaskState.INPUT_REQUIRED and outcome.human_request is not None
    assert outcome.human_request.request_kind == APPROVAL.kind
    return outcome.human_request


def interrupt_value(workflow: Workflow, thread_id: str) -> Any:
    [pending] = workflow.graph.get_state(workflow.config(thread_id)).interrupts
    return pending.value


def chosen(response: str) -> Action:
    action = APPROVAL.responses().get(response)
    assert action is not None, f"the approval pause declares no action for {response!r}"
    return action


def test_a_pause_shows_its_request_as_an_agent_inbox_human_interrupt(workflow: Workflow) -> None:
    request = paused(workflow, "t-view")
    value = interrupt_value(workflow, "t-view")
    assert isinstance(value, list) and len(value) == 1, "Agent Inbox reads a list of one"
    [view] = value
    assert request_in(value) == request == workflow.pending("t-view")
    assert view["action_request"]["action"] == request.request_kind
    assert view["config"] == {
        ALLOWS.get(response, "allow_ignore"): APPROVAL.responses().get(response) is not None
        for response in INBOX_RESPONSES
    }
    editing = chosen("edit")
    assert set(view["action_request"]["args"]) == {
        field for field in ("answers", "constraints", "details") if editing.allows(field)
    }
    description = view["description"]
    assert request.question in description and request.interrupt_id in description
    for fact in request.top_facts:
        assert f"{fact.claim} [{fact.claim_id}: {fact.source_id}" in description
    for question in request.open_questions:
        assert f"- {question.id}: {question.text}" in description
    for ref in request.artifacts:
        assert f"`{ref.uri}` revision {ref.revision}" in description


def test_accept_and_edit_become_the_action_they_are_declared_for(workflow: Workflow) -> None:
    paused(workflow, "t-accept")
    outcome = workflow.resume("t-accept", [{"type": "accept", "args": None}])
    assert outcome.state == TaskState.COMPLETED
    last = workflow.state("t-accept")["decisions"].last()
    assert last is not None and last.action == chosen("accept").name

    paused(workflow, "t-edit")
    edit = {"action": APPROVAL.kind, "args": {"constraints": [CONSTRAINT]}}
    outcome = workflow.resume("t-edit", [{"type": "edit", "args": edit}])
    last = workflow.state("t-edit")["decisions"].last()
    assert last is not None and last.action == chosen("edit").name
    assert last.constraints == [CONSTRAINT], "the edited arguments are the decision's fields"


@pytest.mark.parametrize("edited", [json.dumps([CONSTRAINT]), CONSTRAINT])
def test_an_argument_agent_inbox_edited_as_text_is_read_as_its_field(
    workflow: Workflow, edited: str
) -> None:
    paused(workflow, "t-text")
    edit = {"action": APPROVAL.kind, "args": {"constraints": edited, "answers": "[]"}}
    workflow.resume("t-text", [{"type": "edit", "args": edit}])
    last = workflow.state("t-text")["decisions"].last()
    assert last is not None and last.constraints == [CONSTRAINT] and last.answers == []


def test_a_response_gives_its_text_and_ignore_takes_the_denying_action(workflow: Workflow) -> None:
    paused(workflow, "t-respond")
    workflow.resume("t-respond", [{"type": "response", "args": CONSTRAINT}])
    log = workflow.state("t-respond")["decisions"]
    responded = next(d for d in log.decisions if d.action == chosen("response").name)
    given = getattr(responded, chosen("response").text_as)
    assert given in (CONSTRAINT, [CONSTRAINT])

    paused(workflow, "t-ignore")
    outcome = workflow.resume("t-ignore", {"type": "ignore", "args": None})  # one, not a list
    last = workflow.state("t-ignore")["decisions"].last()
    assert last is not None and last.action == chosen("ignore").name
    assert last.reason == IGNORED
    assert outcome.state == TaskState.REJECTED


@pytest.mark.parametrize(
    ("response", "field"),
    [
        ({"type": "maybe", "args": None}, "type: 'maybe' is no Agent Inbox response"),
        ({"type": "accept", "args": "yes"}, "args: 'accept' takes none"),
        ({"type": "response", "args": " "}, "args: a 'response' gives its text"),
        ({"type": "edit", "args": {"constraints": []}}, "args: an 'edit' gives"),
        ({"type": "edit", "args": {"args": {"budget": 3}}}, "args.args: 'budget' is no decision"),
        (
            {"type": "edit", "args": {"args": {"answers": [{"question_id": "q-99", "text": "x"}]}}},
            "answers: 'q-99' is not an open question",
        ),
    ],
)
def test_a_malformed_inbox_response_is_refused_by_name_and_the_thread_still_waits(
    workflow: Workflow, response: dict[str, Any], field: str
) -> None:
    request = paused(workflow, "t-bad")
    checkpoints = workflow.checkpoint_count("t-bad")
    with pytest.raises(InvalidDecision, match=re.escape(field)):
        workflow.resume("t-bad", [response])
    assert workflow.pending("t-bad") == request
    assert workflow.checkpoint_count("t-bad") == checkpoints
    with pytest.raises(ValidationError) as caught:  # a served client's resume, as LangGraph runs it
        workflow.graph.invoke(
            Command(resume=[response]), workflow.config("t-bad"), context=workflow.context
        )
    assert is_invalid_resume(caught.value)
    assert workflow.pending("t-bad") == request, "nothing was saved; still waiting"


def test_a_pause_declaring_one_inbox_response_for_two_actions_fails_at_import() -> None:
    with pytest.raises(PauseDeclarationError, match="each Agent Inbox response chooses one"):
        Pause("twice", actions=(Action("a", inbox=("accept",)), Action("b", inbox=("accept",))))
    with pytest.raises(PauseDeclarationError, match="inbox= takes a tuple of Agent Inbox"):
        Action("a", inbox=("approve",))
    with pytest.raises(PauseDeclarationError, match="text_as='constraints' must be"):
        Action("a", inbox=("response",), text_as="constraints")
