"""What the door accepts, every later step can hold: no valid input strands a thread."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import InvalidDecision
from app.exit_codes import ExitCode
from app.settings import Settings
from app.workflow import Workflow
from contracts import HumanDecision, TaskSpec, TaskState
from tests.app.test_human_in_the_loop import handoff, paused
from tests.conftest import OBJECTIVE


def longest(model: type[Any], field: str) -> int:
    """The max_length a contract declares for a field (read, not restated)."""
    schema = model.model_json_schema()["properties"][field]
    return int(schema.get("maxLength") or schema["items"]["maxLength"])


def at_length(text: str, length: int) -> str:
    return (text + " ") * (length // (len(text) + 1)) + "x" * (length % (len(text) + 1))


def test_an_objective_and_questions_at_their_limits_run_to_the_end(workflow: Workflow) -> None:
    objective = at_length(OBJECTIVE, longest(TaskSpec, "objective"))
    question = at_length("Who deciphered the hieroglyphs?", longest(TaskSpec, "questions"))
    for thread_id, task in (("t-objective", {}), ("t-questions", {"questions": [question] * 3})):
        workflow.run(
            workflow.task(objective, policies={"require_approval": True}, **task), thread_id
        )
        request = workflow.pending(thread_id)
        assert request is not None, "the approval request holds the longest objective"
        decision = {"interrupt_id": request.interrupt_id, "action": "approve"}
        outcome = workflow.resume(thread_id, decision)
        assert outcome.state == TaskState.COMPLETED, outcome.reason


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("at most 99999 words", "max_words"),
        ("no more than 5 words and at most 20001 words", "max_words"),
        ("section: " + "a very long title " * 10, "required_sections"),
    ],
)
def test_a_constraint_no_article_could_meet_is_refused_and_the_thread_still_waits(
    workflow: Workflow, constraint: str, expected: str
) -> None:
    request = paused(workflow, "t-limit")
    before = workflow.checkpoint_count("t-limit")
    decision = {"interrupt_id": request.interrupt_id, "action": "approve"}
    with pytest.raises(InvalidDecision, match=expected):
        workflow.resume("t-limit", {**decision, "constraints": [constraint]})
    assert workflow.checkpoint_count("t-limit") == before, "a refused decision saved nothing"
    assert workflow.pending("t-limit") == request
    outcome = workflow.resume("t-limit", {**decision, "constraints": ["at most 300 words"]})
    assert outcome.state == TaskState.COMPLETED, outcome.reason


def test_the_contract_refuses_an_impossible_constraint_wherever_a_decision_comes_from() -> None:
    with pytest.raises(ValueError, match=r"constraint 'at most 99999 words' would make max_words"):
        HumanDecision(
            interrupt_id="approve-research-s2", action="revise", constraints=["at most 99999 words"]
        )
    kept = HumanDecision(interrupt_id="x", action="revise", constraints=["at most 99 words"])
    assert kept.constraints == ["at most 99 words"]


@pytest.mark.e2e
def test_the_cli_refuses_an_impossible_constraint_with_exit_2(settings: Settings) -> None:
    run = handoff(settings, "run", OBJECTIVE, "--thread", "t-cli-limit", "--require-approval")
    assert run.returncode == ExitCode.WAITING_FOR_HUMAN, run.stderr
    refused = handoff(
        settings, "resume", "t-cli-limit", "--approve", "--constraint", "at most 99999 words"
    )
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    assert "max_words" in refused.stderr and "Traceback" not in refused.stderr
    decided = handoff(settings, "resume", "t-cli-limit", "--approve")
    assert decided.returncode == ExitCode.COMPLETED, decided.stderr
