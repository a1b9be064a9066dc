"""The input hash that decides reuse covers every declared input, the contracts' versions
and the code of the node and its agent: equal hash, equal work."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from app.settings import Settings
from app.workflow import Workflow
from contracts import DraftArticle, Handoff, TaskSpec
from graphs import WIRING, NodeCall, NodeResult, NodeSpec
from graphs.errors import ContractViolation
from graphs.input_hash import input_hash
from graphs.node_runner import NodeCall as RunnerCall
from tests.contracts.examples import EXAMPLES

SPECS = {spec.name: spec for spec, _ in WIRING}


def _state() -> dict[str, Any]:
    return {channel: EXAMPLES[spec.contract] for channel, spec in SPECS["finalize"].inputs.items()}


@pytest.fixture
def context(tmp_path: Any) -> Any:
    with Workflow(Settings(data_dir=tmp_path, model="offline")) as workflow:
        yield workflow.context


@pytest.mark.parametrize("channel", sorted(SPECS["finalize"].inputs))
def test_every_declared_input_changes_the_hash(context: Any, channel: str) -> None:
    spec = SPECS["finalize"]
    state = _state()
    task = TaskSpec.model_validate(state["task"])
    before = input_hash(spec, state, context, task)
    state[channel] = None if channel != "task" else task.model_copy(update={"objective": "x"})
    assert input_hash(spec, state, context, task) != before


def test_a_channel_the_node_does_not_read_leaves_the_hash_alone(context: Any) -> None:
    spec = SPECS["conclude"]
    state = _state()
    task = TaskSpec.model_validate(state["task"])
    before = input_hash(spec, state, context, task)
    assert "handoff" not in spec.inputs
    state["handoff"] = None
    assert input_hash(spec, state, context, task) == before


def test_other_code_for_the_node_changes_the_hash(context: Any) -> None:
    spec = SPECS["finalize"]
    state = _state()
    task = TaskSpec.model_validate(state["task"])

    def upgraded(call: NodeCall) -> NodeResult:  # defined here: another source file
        return NodeResult({})

    assert input_hash(replace(spec, body=upgraded), state, context, task) != input_hash(
        spec, state, context, task
    )


def test_another_agent_implementation_changes_the_hash(context: Any) -> None:
    spec = SPECS["writer"]
    state = {"task": EXAMPLES[TaskSpec], "handoff": EXAMPLES[Handoff]}
    task = TaskSpec.model_validate(state["task"])

    class OtherWriter:
        def run(self, request: Any) -> Any:
            raise AssertionError("not called")

    other = context.with_agent("writer", OtherWriter())
    assert input_hash(spec, state, other, task) != input_hash(spec, state, context, task)


def test_a_contract_version_bump_changes_the_hash(
    context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = SPECS["finalize"]
    state = _state()
    task = TaskSpec.model_validate(state["task"])
    before = input_hash(spec, state, context, task)
    field = DraftArticle.model_fields["schema_version"]
    monkeypatch.setattr(field, "default", "9.9")
    assert input_hash(spec, state, context, task) != before


def test_a_body_reading_a_channel_it_did_not_declare_is_refused(context: Any) -> None:
    spec: NodeSpec = SPECS["conclude"]
    call = RunnerCall(spec=spec, state=_state(), task=EXAMPLES[TaskSpec], ctx=context, step=None)  # type: ignore[arg-type]
    with pytest.raises(ContractViolation, match="reads 'handoff', which its input schema"):
        call.read("handoff")


def test_plain_dicts_from_the_dev_server_hash_like_the_models_they_hold(context: Any) -> None:
    spec = SPECS["finalize"]
    models = {
        channel: spec.inputs[channel].contract.model_validate(value)
        for channel, value in _state().items()
    }
    task = models["task"]
    dicts = {channel: model.model_dump(mode="json") for channel, model in models.items()}
    assert input_hash(spec, dicts, context, task) == input_hash(spec, models, context, task)


def test_an_invalid_plain_input_is_refused_naming_its_field(context: Any) -> None:
    spec = SPECS["finalize"]
    state = _state()
    task = TaskSpec.model_validate(state["task"])
    draft = {**DraftArticle.model_validate(state["draft"]).model_dump(mode="json"), "revision": 0}
    with pytest.raises(ContractViolation, match=r"draft\.revision"):
        input_hash(spec, {**state, "draft": draft}, context, task)
