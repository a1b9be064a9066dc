"""A node body may be written as a LangGraph node, and the boundary holds for it all the same.

``def tally(state: TallyInput, runtime: Runtime[RunContext]) -> TallyOutput`` reads each
declared channel as its contract (``state[...]``), gets LangGraph's runtime with the run's
services as its context, and returns its update as a dict: validated, audited and handed
over as a NodeResult is. It may pause as any node does: ``get_step_info()`` gives it the step
its request and the recorded decision are made from. What its agent's runs report is charged
to the attempt however the body called it, so no body can leave the cost out.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, cast, runtime_checkable

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import is_invalid_resume
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import Field, ValidationError
from typing_extensions import TypedDict

from app.services import build_context
from app.settings import Settings
from app.storage.serde import contract_serializer
from contracts import (
    DecisionLog,
    ErrorCode,
    HumanDecision,
    NodeRun,
    RunOutcome,
    TaskSpec,
    Usage,
    VersionedContract,
)
from graphs import (
    AgentOutput,
    NodeCall,
    RunContext,
    build_graph,
    get_step_info,
    node,
)
from graphs.errors import Omitted, TransientError, WiringError
from graphs.human import ask, pause_request, recorded, request_in
from graphs.input_hash import code_version
from graphs.pauses import Action, Pause, PauseDeclarationError
from graphs.routing import STOP
from tests.graphs.test_fan_out import Lines
from tests.graphs.test_omissions import ToollessRequest as CountRequest
from tests.graphs.test_omissions import run


class WordTally(VersionedContract):
    """How many words the task's objective has."""

    kind: Literal["word_tally"] = Field(default="word_tally", description="Discriminator.")
    words: int = Field(ge=1, description="Words in the objective.")

    EXAMPLES = [{"words": 7}]


class TallyInput(TypedDict):
    task: TaskSpec
    outcome: RunOutcome | None


class TallyOutput(TypedDict, total=False):
    tally: WordTally | None


SEEN: list[Any] = []


@node("tally", reads=TallyInput, writes=TallyOutput, terminal=True)
def tally(state: TallyInput, runtime: Runtime[RunContext]) -> TallyOutput:
    """Counts the objective's words, as a plain LangGraph node would."""
    SEEN.append(runtime.context)
    return {"tally": WordTally(words=len(state["task"].objective.split()))}


@node("bad_tally", reads=TallyInput, writes=TallyOutput, terminal=True)
def bad_tally(state: TallyInput) -> dict[str, Any]:
    return {"tally": {"words": 0}}


@node("unsaid_tally", reads=TallyInput, writes=TallyOutput, terminal=True)
def unsaid_tally(state: TallyInput) -> str:
    return "seven words"


@node("nosy_tally", reads=TallyInput, writes=TallyOutput, terminal=True)
def nosy_tally(state: Any) -> TallyOutput:
    return {"tally": WordTally(words=len(state["draft"].body.sha256))}


CountAction = Literal["count", "skip"]
COUNT: Pause[CountAction] = Pause(
    "count_words",
    actions=(Action("count"), Action("skip", needs=("reason",))),
    literal=CountAction,
)


class CountInput(TypedDict):
    task: TaskSpec
    decisions: DecisionLog | None


class CountOutput(TypedDict, total=False):
    decisions: DecisionLog | None
    tally: WordTally | None


@node("count_words", reads=CountInput, writes=CountOutput, pauses=COUNT, terminal=True)
def count_words(state: CountInput, runtime: Runtime[RunContext]) -> CountOutput:
    """Asks before counting, as a plain LangGraph node with a typed decision would."""
    step = get_step_info()
    request = pause_request(COUNT, step, question="Count the objective's words?")
    decision = ask(COUNT, request)
    log = recorded(state["decisions"], decision, request, step)
    if COUNT.chosen(decision) == "skip":
        return {"decisions": log}
    return {"decisions": log, "tally": WordTally(words=len(state["task"].objective.split()))}


def compiled(wiring: Any, tmp_path: Path) -> tuple[Any, RunContext]:
    """``wiring``'s graph on an in-memory checkpointer, and the services its runs are given."""
    services = build_context(Settings(data_dir=tmp_path, database_url="memory://"))
    graph = build_graph(wiring=wiring).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    return graph, services


def test_a_body_written_as_a_langgraph_node_reads_contracts_and_its_update_is_handed_over(
    tmp_path: Path,
) -> None:
    SEEN.clear()
    values = run(((tally, STOP),), tmp_path, "t-tally")
    assert values["tally"] == WordTally(words=7)  # "Show what a step left out does"
    assert values["handoff"].from_node == "tally"
    assert len(SEEN) == 1 and isinstance(SEEN[0], RunContext)


def test_a_returned_update_breaking_its_contract_stops_the_run_naming_the_field(
    tmp_path: Path,
) -> None:
    outcome: RunOutcome = run(((bad_tally, STOP),), tmp_path, "t-bad")["outcome"]
    [error] = outcome.errors
    assert error.code == ErrorCode.INVALID_OUTPUT and error.field == "tally.words"


def test_a_body_returning_neither_update_nor_result_fails_naming_what_to_return(
    tmp_path: Path,
) -> None:
    with pytest.raises(TypeError, match=r"'unsaid_tally' returned str: return its update as a"):
        run(((unsaid_tally, STOP),), tmp_path, "t-unsaid")


@node("routing_tally", reads=TallyInput, writes=TallyOutput, terminal=True)
def routing_tally(state: TallyInput) -> Any:
    return Command(update={"tally": WordTally(words=1)}, goto=STOP)


def test_a_body_returning_an_unannotated_command_is_told_how_to_route_itself(
    tmp_path: Path,
) -> None:
    with pytest.raises(TypeError, match=r"returned Command: where the run goes is its router's"):
        run(((routing_tally, STOP),), tmp_path, "t-command")


PICKS: list[str] = []


class Unwritten(TypedDict, total=False):
    """A node that only decides where the run goes writes nothing."""


@node("pick", reads=TallyInput, writes=Unwritten)
def pick(state: TallyInput) -> Command[Literal["tally", "short_tally"]]:
    """Routes itself, as a LangGraph node returning a Command does."""
    return Command(goto=PICKS.pop(0))


@node("short_tally", reads=TallyInput, writes=TallyOutput, terminal=True)
def short_tally(state: TallyInput) -> TallyOutput:
    return {"tally": WordTally(words=1)}


PICKING = ((pick, None), (tally, STOP), (short_tally, STOP))


def test_a_body_returning_a_command_goes_where_it_says_and_a_replay_goes_there_again(
    tmp_path: Path,
) -> None:
    graph, services = compiled(PICKING, tmp_path)
    config: Any = {"configurable": {"thread_id": "t-pick"}}
    PICKS[:] = ["short_tally"]
    graph.invoke(
        {"task": TaskSpec(task_id="t-pick", objective="Pick one")}, config, context=services
    )
    assert graph.get_state(config).values["tally"] == WordTally(words=1)
    history = list(graph.get_state_history(config))
    [handed] = [snap.values["handoff"] for snap in history if snap.next == ("short_tally",)]
    assert (handed.from_node, handed.next_allowed_action) == ("pick", "short_tally")

    [before] = [snap for snap in history if snap.next == ("pick",)]
    graph.invoke(None, before.config, context=services)  # PICKS is empty: the body may not run
    assert graph.get_state(config).values["tally"] == WordTally(words=1)
    picks = [run for run in services.ledger.runs("t-pick") if run.node_id == "pick"]
    assert [run.reused for run in picks] == [False, True], "replayed where its Command went"


def test_a_command_to_a_node_its_return_type_does_not_name_fails_naming_them(
    tmp_path: Path,
) -> None:
    PICKS[:] = ["count_words"]
    with pytest.raises(TypeError, match=r"return type names \(tally, short_tally\)"):
        run(PICKING, tmp_path, "t-stray")


def test_a_node_routing_itself_is_wired_without_a_router_and_any_other_with_one() -> None:
    with pytest.raises(WiringError, match=r"wire it as \(pick, None\)"):
        build_graph(wiring=((pick, "tally"), (tally, STOP), (short_tally, STOP)))
    with pytest.raises(WiringError, match=r"'tally' is wired with no route"):
        build_graph(wiring=((tally, None),))


def test_reading_an_undeclared_key_of_the_state_fails_naming_it(tmp_path: Path) -> None:
    with pytest.raises(Omitted, match=r"'nosy_tally' reads 'draft', which its input schema"):
        run(((nosy_tally, STOP),), tmp_path, "t-nosy")


def test_the_runtime_a_body_gets_carries_the_services_the_graph_resolved(tmp_path: Path) -> None:
    """A served run passes no RunContext (JSON choices at most): the graph's default makes
    one, and that is the context of the runtime the body gets, not what the caller passed."""
    SEEN.clear()
    services = build_context(Settings(data_dir=tmp_path, database_url="memory://"))
    graph = build_graph(default_context=lambda _: services, wiring=((tally, STOP),)).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-served"}}
    graph.invoke({"task": TaskSpec(task_id="t-served", objective="Count these four words")}, config)
    assert graph.get_state(config).values["tally"].words == 4 and SEEN == [services]


def test_a_body_written_as_a_langgraph_node_pauses_and_records_the_typed_decision(
    tmp_path: Path,
) -> None:
    graph, services = compiled(((count_words, STOP),), tmp_path)
    config: Any = {"configurable": {"thread_id": "t-count"}}
    task = TaskSpec(task_id="t-count", objective="Count these four words")
    graph.invoke({"task": task}, config, context=services)
    [waiting] = graph.get_state(config).interrupts
    request = request_in(waiting.value)
    assert (request.request_kind, request.allowed_actions) == ("count_words", ["count", "skip"])
    assert request.interrupt_id.startswith("count-words-s"), "made from the body's step"

    wrong = {"interrupt_id": request.interrupt_id, "action": "skip", "decided_by": "t"}
    with pytest.raises(ValidationError) as refused:
        graph.invoke(Command(resume=wrong), config, context=services)
    assert is_invalid_resume(refused.value) and "reason is required" in str(refused.value)
    assert graph.get_state(config).interrupts, "the thread still waits"

    right = HumanDecision(interrupt_id=request.interrupt_id, action="count", decided_by="t")
    graph.invoke(Command(resume=right.model_dump(mode="json")), config, context=services)
    values = graph.get_state(config).values
    assert values["tally"] == WordTally(words=4)
    [recorded_decision] = values["decisions"].decisions
    assert recorded_decision.interrupt_id == request.interrupt_id
    assert recorded_decision.action == "count"


def test_asking_for_the_step_outside_a_body_says_so() -> None:
    with pytest.raises(RuntimeError, match=r"get_step_info\(\) is called from outside a node"):
        get_step_info()


@runtime_checkable
class CountingAgent(Protocol):
    def run(self, request: CountRequest) -> AgentOutput[WordTally]: ...


@dataclass
class Counting:
    """Counts the objective's words and says it spent ``tokens``; ``words`` overrides it."""

    tokens: int
    words: list[int] = field(default_factory=list)

    def run(self, request: CountRequest) -> AgentOutput[WordTally]:
        words = self.words.pop(0) if self.words else len(request.task.objective.split())
        return AgentOutput(WordTally.model_construct(words=words), usage=Usage(tokens=self.tokens))


@node("agent_tally", reads=TallyInput, writes=TallyOutput, agent=CountingAgent)
def agent_tally(state: TallyInput, runtime: Runtime[RunContext]) -> TallyOutput:
    """Asks its agent, as a plain LangGraph node reaches a service: through the context."""
    agent = runtime.context.agent_for(agent_tally)
    request = CountRequest(state["task"], runtime.context.store, get_step_info())
    output = agent.run(request)
    return {"tally": output.result}


@node("delegated_tally", reads=TallyInput, writes=TallyOutput, agent=CountingAgent)
def delegated_tally(call: NodeCall) -> dict[str, Any]:
    """Delegates, then returns its update alone: the cost is not the body's to pass on."""
    return {"tally": call.delegate(CountRequest, "tally")}


def audited(spec: Any, agent: Counting, tmp_path: Path, **budget: int) -> list[NodeRun]:
    """The audit of one run of ``spec`` alone, its agent ``agent``."""
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    context = replace(build_context(settings), agents={spec.name: agent})
    graph = build_graph(wiring=((spec, STOP),)).compile(
        checkpointer=InMemorySaver(serde=contract_serializer())
    )
    config: Any = {"configurable": {"thread_id": "t-charged"}}
    task = TaskSpec(task_id="t-charged", objective="Count these four words", budget=budget)
    graph.invoke({"task": task}, config, context=context)
    return context.ledger.runs("t-charged")


@pytest.mark.parametrize("spec", [agent_tally, delegated_tally], ids=["runtime", "delegate"])
def test_what_an_agent_spent_is_charged_however_the_body_called_it(
    spec: Any, tmp_path: Path
) -> None:
    [ran] = audited(spec, Counting(tokens=40), tmp_path)
    assert ran.status == "succeeded" and ran.usage.tokens == 40


def test_an_agent_output_breaking_its_contract_is_charged_and_repaired(tmp_path: Path) -> None:
    runs = audited(delegated_tally, Counting(tokens=40, words=[0]), tmp_path)
    assert [(run.status, run.usage.tokens) for run in runs] == [("failed", 40), ("succeeded", 40)]
    assert runs[0].error is not None and runs[0].error.kind == "invalid_output"


def test_a_terminal_node_may_not_declare_an_agent_that_could_spend_past_the_budget() -> None:
    with pytest.raises(TypeError, match=r"'late_tally' is terminal and declares an agent"):
        node("late_tally", reads=TallyInput, writes=TallyOutput, agent=CountingAgent, terminal=True)


class Busy(TransientError):
    """An agent's failure that says what it had spent, as model-backed agents' errors do."""

    usage = Usage(tokens=30)


class Flaky:
    """Fails once, having spent 30 tokens, then counts."""

    def __init__(self) -> None:
        self.failed = False

    def run(self, request: CountRequest) -> AgentOutput[WordTally]:
        if not self.failed:
            self.failed = True
            raise Busy("the model is busy")
        return AgentOutput(WordTally(words=4), usage=Usage(tokens=5))


@node("patient_tally", reads=TallyInput, writes=TallyOutput, agent=CountingAgent)
def patient_tally(call: NodeCall) -> dict[str, Any]:
    """Catches its agent's failure and asks again: both runs are the attempt's cost."""
    try:
        return {"tally": call.delegate(CountRequest, "tally")}
    except Busy:
        return {"tally": call.delegate(CountRequest, "tally")}


def test_a_failed_agent_run_the_body_caught_is_charged_all_the_same(tmp_path: Path) -> None:
    [ran] = audited(patient_tally, cast(Any, Flaky()), tmp_path)
    assert ran.status == "succeeded" and ran.usage.tokens == 35


class StoredOutput(TypedDict, total=False):
    lines: Lines | None


@node("store_lines", reads=TallyInput, writes=StoredOutput, stores_artifacts=True)
def store_lines(state: TallyInput, runtime: Runtime[RunContext]) -> StoredOutput:
    """Stores a text and returns its reference, as a plain LangGraph node would."""
    name = get_step_info().artifact_id("lines")
    ref = runtime.context.store.put(name, "notes", b"one\ntwo\n", "text/plain")
    return {"lines": Lines(body=ref)}


def test_what_a_plain_body_stored_is_audited_from_the_references_it_returns(
    tmp_path: Path,
) -> None:
    [ran] = audited(store_lines, Counting(tokens=0), tmp_path)
    [stored] = ran.artifact_ids
    assert stored.endswith("-lines@1") and "t-charged" in stored


class CountingState(TypedDict, total=False):
    task: TaskSpec
    words: list[str]
    tally: WordTally | None


def split_words(state: CountingState) -> CountingState:
    return {"words": state["task"].objective.split()}


def count_words_split(state: CountingState) -> CountingState:
    return {"tally": WordTally(words=len(state["words"]))}


def counting_graph() -> Any:
    """A two-step LangGraph graph of its own, compiled as any subgraph is."""
    steps = StateGraph(CountingState)
    steps.add_node("split_words", split_words)
    steps.add_node("count_words_split", count_words_split)
    steps.add_edge(START, "split_words")
    steps.add_edge("split_words", "count_words_split")
    return steps.compile(name="counting")


counted = node("counted", reads=TallyInput, writes=TallyOutput, terminal=True)(counting_graph())


def test_a_compiled_graph_runs_as_a_node_s_body_its_code_in_the_input_hash(tmp_path: Path) -> None:
    values = run(((counted, STOP),), tmp_path, "t-subgraph")
    assert values["tally"] == WordTally(words=7)  # "Show what a step left out does"
    assert values["handoff"].from_node == "counted" and "words" not in values
    version = code_version(counted.body)
    assert "split_words" in version and "count_words_split" in version


def test_a_compiled_graph_put_in_the_wiring_is_told_to_be_a_node_s_body() -> None:
    with pytest.raises(WiringError, match=r"a compiled graph runs as a node's body"):
        build_graph(wiring=((counting_graph(), STOP),))  # type: ignore[arg-type]


def talking_model(tokens: int) -> GenericFakeChatModel:
    """A chat model that answers once, reporting ``tokens`` spent, as a provider's does."""
    spent = {"input_tokens": tokens - 1, "output_tokens": 1, "total_tokens": tokens}
    return GenericFakeChatModel(messages=iter([AIMessage(content="seven", usage_metadata=spent)]))


@node("asks_a_model", reads=TallyInput, writes=TallyOutput, terminal=True, retry=None)
def asks_a_model(state: TallyInput) -> TallyOutput:
    """Calls a chat model itself, with no agent declared."""
    answer = talking_model(1000).invoke(state["task"].objective)
    if state["task"].objective.startswith("Fail"):
        raise ValueError("the model's answer could not be used")
    return {"tally": WordTally(words=len(str(answer.content).split()) or 1)}


@pytest.mark.parametrize("objective", ["Count these words", "Fail after asking"])
def test_a_chat_model_a_body_calls_itself_is_charged_to_the_attempt(
    tmp_path: Path, objective: str
) -> None:
    graph, services = compiled(((asks_a_model, STOP),), tmp_path)
    config: Any = {"configurable": {"thread_id": "t-model"}}
    try:
        graph.invoke(
            {"task": TaskSpec(task_id="t-model", objective=objective)}, config, context=services
        )
    except ValueError:
        assert objective.startswith("Fail")
    [attempt] = services.ledger.runs("t-model")
    assert attempt.usage.tokens == 1000, "what the model reported, whether the body used it or not"


WHEN: Pause[Literal["now", "later"]] = Pause(
    "publish_when", actions=(Action("now"), Action("later")), literal=Literal["now", "later"]
)


@node("asks_twice", reads=CountInput, writes=CountOutput, pauses=COUNT, terminal=True)
def asks_twice(state: CountInput) -> CountOutput:
    """Asks its own pause, then a second question through a pause it does not declare."""
    step = get_step_info()
    ask(COUNT, pause_request(COUNT, step, question="Count the objective's words?"))
    ask(WHEN, pause_request(WHEN, step, question="Publish now?"))
    return {}


def test_a_question_through_a_pause_the_node_does_not_declare_fails_naming_both(
    tmp_path: Path,
) -> None:
    graph, services = compiled(((asks_twice, STOP),), tmp_path)
    config: Any = {"configurable": {"thread_id": "t-twice"}}
    graph.invoke({"task": TaskSpec(task_id="t-twice", objective="Ask")}, config, context=services)
    [waiting] = graph.get_state(config).interrupts
    answer = {"interrupt_id": request_in(waiting.value).interrupt_id, "action": "count"}
    with pytest.raises(PauseDeclarationError, match=r"'asks_twice' asks through pause 'publish_w"):
        graph.invoke(Command(resume={**answer, "decided_by": "t"}), config, context=services)


@node("async_tally", reads=TallyInput, writes=TallyOutput, terminal=True)
async def async_tally(state: TallyInput, runtime: Runtime[RunContext]) -> TallyOutput:
    """An async LangGraph node body: awaits, then counts, its step and context at hand."""
    await asyncio.sleep(0)
    assert get_step_info().node == "async_tally" and isinstance(runtime.context, RunContext)
    return {"tally": WordTally(words=len(state["task"].objective.split()))}


def test_an_async_body_runs_to_its_end_and_its_update_is_handed_over(tmp_path: Path) -> None:
    values = run(((async_tally, STOP),), tmp_path, "t-async")
    assert values["tally"] == WordTally(words=7)
    assert values["handoff"].from_node == "async_tally"


def test_an_async_body_runs_under_ainvoke_as_the_dev_server_runs_the_graph(
    tmp_path: Path,
) -> None:
    graph, services = compiled(((async_tally, STOP),), tmp_path)
    config: Any = {"configurable": {"thread_id": "t-ainvoke"}}
    task = TaskSpec(task_id="t-ainvoke", objective="Count these four words")
    asyncio.run(graph.ainvoke({"task": task}, config, context=services))
    assert graph.get_state(config).values["tally"] == WordTally(words=4)


@dataclass
class LeavesItsModelOut(Counting):
    """Asks a chat model that spends ``tokens``, and reports nothing of it (as a prebuilt
    agent handed back without its usage would)."""

    def run(self, request: CountRequest) -> AgentOutput[WordTally]:
        talking_model(self.tokens).invoke(request.task.objective)
        return AgentOutput(WordTally(words=len(request.task.objective.split())))


@dataclass
class ReportsItsModel(Counting):
    """Asks a chat model that spends ``tokens``, and reports them, as the shipped agents do."""

    def run(self, request: CountRequest) -> AgentOutput[WordTally]:
        output = LeavesItsModelOut(self.tokens).run(request)
        return AgentOutput(output.result, usage=Usage(tokens=self.tokens))


def test_an_agent_is_charged_at_least_what_its_models_reported(tmp_path: Path) -> None:
    [ran] = audited(delegated_tally, LeavesItsModelOut(tokens=500), tmp_path)
    assert ran.usage.tokens == 500
    [honest] = audited(delegated_tally, ReportsItsModel(tokens=500), tmp_path / "honest")
    assert honest.usage.tokens == 500, "an agent that reports its model's usage is charged once"
