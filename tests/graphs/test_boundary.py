"""A node visit's view of state: each channel validated once, and never the state's object."""

from __future__ import annotations

from typing import Any

import pytest

from contracts import TaskSpec
from graphs import boundary
from graphs.boundary import CheckedState, read, require
from graphs.errors import ContractViolation
from tests.conftest import OBJECTIVE


def task(task_id: str = "t1") -> TaskSpec:
    return TaskSpec(task_id=task_id, objective=OBJECTIVE)


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The channels validated, in order."""
    seen: list[str] = []
    real = boundary.validate_as

    def counting(node: str, channel: str, value: Any, model: Any, *, many: bool = False) -> Any:
        seen.append(channel)
        return real(node, channel, value, model, many=many)

    monkeypatch.setattr(boundary, "validate_as", counting)
    return seen


def test_a_visit_validates_a_channel_once_and_reads_a_copy_not_the_states_object(
    validations: list[str],
) -> None:
    original = task()
    state = CheckedState({"task": original, "draft": None})
    first = require(state, "task", TaskSpec, node="writer")
    again = read(state, "task", TaskSpec, node="writer")
    assert again is first and first is not original and first == original
    assert read(state, "draft", TaskSpec, node="writer") is None
    assert validations == ["task", "draft"]


def test_a_plain_mapping_is_validated_on_every_read(validations: list[str]) -> None:
    state = {"task": task()}
    assert read(state, "task", TaskSpec, node="writer") == read(
        state, "task", TaskSpec, node="writer"
    )
    assert validations == ["task", "task"]


def test_an_invalid_channel_is_refused_at_every_read_naming_its_field() -> None:
    drifted = TaskSpec.model_construct(**{**task().model_dump(), "objective": 7})
    state = CheckedState({"task": drifted})
    for _ in range(2):
        with pytest.raises(ContractViolation, match=r"task\.objective"):
            require(state, "task", TaskSpec, node="writer")


def test_the_state_after_an_update_reads_the_written_values_and_keeps_the_rest(
    validations: list[str],
) -> None:
    state = CheckedState({"task": task("old"), "research": None})
    read(state, "research", TaskSpec, node="writer")
    written = task("new")
    after = state.updated({"task": written})
    assert after["task"] is written and dict(after) == {"task": written, "research": None}
    assert require(after, "task", TaskSpec, node="writer") is written
    assert read(after, "research", TaskSpec, node="writer") is None
    assert validations == ["research"]
