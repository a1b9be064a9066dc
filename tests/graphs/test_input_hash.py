"""The input hash that decides reuse covers every declared input, the contracts' versions
and the code of the node and its agent: equal hash, equal work."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from dataclasses import replace
from typing import Any, Literal

import pytest

from app.settings import Settings
from app.workflow import Workflow
from contracts import DraftArticle, Handoff, TaskSpec
from graphs import WIRING, NodeCall, NodeResult, NodeSpec, node
from graphs.errors import ContractViolation, Omitted
from graphs.input_hash import code_version, input_hash
from graphs.node_runner import NodeCall as RunnerCall
from graphs.routing import STOP, RouteState
from tests.contracts.examples import EXAMPLES
from tests.graphs.test_omissions import Nothing, TaskOnly, run

SPECS = {spec.name: spec for spec, _ in WIRING}


def _state() -> dict[str, Any]:
    return {channel: EXAMPLES[spec.contract] for channel, spec in SPECS["finalize"].inputs.items()}


@pytest.fixture
def context(tmp_path: Any) -> Any:
    settings = Settings(data_dir=tmp_path, database_url="memory://", model="offline")
    with Workflow(settings) as workflow:
        yield workflow.context


@pytest.mark.parametrize("channel", sorted(SPECS["finalize"].inputs))
def test_every_declared_input_changes_the_hash(context: Any, channel: str) -> None:
    spec = SPECS["finalize"]
    state = _state()
    task = TaskSpec.model_validate(state["task"])
    before = input_hash(spec, state, context, task)
    if channel == "task":
        task = task.model_copy(update={"objective": "x"})
    state[channel] = None if channel != "task" else task
    assert input_hash(spec, state, context, task) != before


def test_a_new_task_version_alone_leaves_the_hash_alone(context: Any) -> None:
    spec = SPECS["finalize"]
    state = _state()
    task = TaskSpec.model_validate(state["task"])
    revised = task.model_copy(update={"task_version": task.task_version + 1})
    assert input_hash(spec, {**state, "task": revised}, context, revised) == input_hash(
        spec, state, context, task
    )


def _changed(task: TaskSpec, **changes: Any) -> TaskSpec:
    return TaskSpec.model_validate({**task.model_dump(), **changes})


def _branch_hash(context: Any, task: TaskSpec, key: str, tasks: int) -> str:
    spec = SPECS["research"]
    branch = {"node": "research", "key": key, "tasks": tasks, "nodes": ["research"]}
    state = {"task": task, "handoff": None, "research": None, "freshness": None}
    return input_hash(spec, {**state, "branch": branch}, context, task)


def test_a_research_branch_hash_covers_its_own_question_only(context: Any) -> None:
    task = TaskSpec(
        objective="Explain how the Rosetta Stone was deciphered",
        questions=["What does the stone contain?"],
        constraints={"max_words": 300},
        corpus=["examples/corpus"],
    )
    before = {key: _branch_hash(context, task, key, 2) for key in ("q-1", "q-2")}
    asked_more = _changed(task, questions=[*task.questions, "Who found it?"], task_version=2)
    tightened = _changed(task, constraints={"max_words": 100}, task_version=2)
    for key in ("q-1", "q-2"):  # the budget share (tasks) is no part of the work
        assert _branch_hash(context, asked_more, key, 3) == before[key]
        assert _branch_hash(context, tightened, key, 2) == before[key]
    reworded = _changed(task, questions=["What is written on the stone?"])
    assert _branch_hash(context, reworded, "q-2", 2) != before["q-2"]
    assert _branch_hash(context, reworded, "q-1", 2) == before["q-1"]
    sectioned = _changed(task, constraints={"required_sections": ["Background"]})
    assert _branch_hash(context, sectioned, "q-1", 2) != before["q-1"]  # q-1 ranks them
    assert _branch_hash(context, sectioned, "q-2", 2) == before["q-2"]


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
    with pytest.raises(Omitted, match="reads 'handoff', which its input schema"):
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


def test_code_with_no_source_file_is_hashed_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent typed into ``python -`` or a REPL has no file to read: its name stands for it."""
    typed_in = types.ModuleType("typed_in")
    typed_in.__file__ = "<stdin>"
    typed_in.__loader__ = importlib.machinery.BuiltinImporter()  # as ``python -``'s __main__
    monkeypatch.setitem(sys.modules, "typed_in", typed_in)
    exec(compile("class Agent:\n    pass\n", "<stdin>", "exec"), typed_in.__dict__)
    assert code_version(typed_in.Agent()) == "typed_in.Agent:unread"


def test_a_task_view_on_a_node_outside_a_branch_is_called_without_a_key(tmp_path: Any) -> None:
    """Only a branch task is handed a ``branch``; any node may narrow what of the task it uses."""
    seen: list[str | None] = []

    def objective_only(task: TaskSpec, key: str | None) -> str:
        seen.append(key)
        return task.objective

    @node("narrow", reads=TaskOnly, writes=Nothing, task_view=objective_only)
    def narrow(call: NodeCall) -> NodeResult:
        return NodeResult({})

    def ends(state: RouteState) -> Literal["__end__"]:  # reads its own channels, not all
        return STOP

    run(((narrow, ends),), tmp_path, "t-narrow")
    assert seen == [None]


def writer_hashes(context: Any, *models: str) -> list[str]:
    """The writer's input hash, with the same state, around a fake chat model of each name."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from app.agents.llm_writer import LLMWriterAgent

    state = {"task": EXAMPLES[TaskSpec], "handoff": EXAMPLES[Handoff]}
    task = TaskSpec.model_validate(state["task"])
    return [
        input_hash(
            SPECS["writer"],
            state,
            context.with_agent(
                "writer",
                LLMWriterAgent(model=FakeListChatModel(name=name, responses=["draft"])),
            ),
            task,
        )
        for name in models
    ]


def test_the_same_agent_around_another_chat_model_changes_the_hash(context: Any) -> None:
    one, other = writer_hashes(context, "model-one", "model-two")
    assert one != other


def test_the_same_agent_around_the_same_chat_model_keeps_the_hash(context: Any) -> None:
    one, again = writer_hashes(context, "model-one", "model-one")
    assert one == again
