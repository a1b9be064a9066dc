"""Streaming a run through the Workflow, and what a model that streams is charged.

``Workflow.stream`` is ``run`` with LangGraph's stream parts yielded as the run goes: a
node's chat model's tokens in ``stream_mode="messages"``, with every check, the lock and the
durable checkpoints ``run`` has, and the run's outcome as the generator's return value. A
model streaming its tokens often reports no usage: the attempt is charged an estimate,
marked as one, and a model that reports its usage is charged that, never more.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, UsageMetadata
from langchain_core.outputs import ChatGenerationChunk

from app.errors import ThreadBusy, ThreadExists, ThreadFinished, ThreadNotFound, UnknownNode
from app.settings import Settings
from app.workflow import Workflow
from contracts import NodeRun, RunOutcome, TaskState
from graphs import get_step_info, node
from graphs.budget import estimated_tokens
from graphs.outcomes import run_outcome
from graphs.routing import STOP
from tests.graphs.test_declare import TallyInput, TallyOutput, WordTally

REPLY = "the stone carried one decree in three scripts"
REPORTED = 1000


class UsageStreamingModel(GenericFakeChatModel):
    """Streams its reply word by word, then its usage in a last empty chunk, as a provider
    streaming with usage on (OpenAI's ``stream_usage``) does."""

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Iterator[Any]:
        yield from super()._stream(messages, *args, **kwargs)
        spent = UsageMetadata(input_tokens=REPORTED - 8, output_tokens=8, total_tokens=REPORTED)
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=spent))


MODELS: dict[str, type[GenericFakeChatModel]] = {
    "silent": GenericFakeChatModel,  # streams its tokens, reports no usage
    "reporting": UsageStreamingModel,
}


class TalkOutput(TallyOutput, total=False):
    outcome: RunOutcome | None


@node("talks", reads=TallyInput, writes=TalkOutput, terminal=True, retry=None)
def talks(state: TallyInput) -> TalkOutput:
    """Asks a chat model about the objective (the kind named in it), counts the reply, ends."""
    task = state["task"]
    model = MODELS["reporting" if "reporting" in task.objective else "silent"]
    answer = model(messages=iter([AIMessage(REPLY)])).invoke(task.objective)
    ended = run_outcome(task, get_step_info(), TaskState.COMPLETED, "completed")
    return {"tally": WordTally(words=len(str(answer.content).split())), "outcome": ended}


WIRING = ((talks, STOP),)


@pytest.fixture
def workflow(settings: Settings) -> Iterator[Workflow]:
    """A Workflow whose one node calls a chat model, on this test's own storage."""
    with Workflow(settings, wiring=WIRING) as opened:
        yield opened


def streamed(parts: Any) -> tuple[list[Any], RunOutcome]:
    """What a Workflow stream yields, and what it returns at its end."""
    yielded = []
    while True:
        try:
            yielded.append(next(parts))
        except StopIteration as done:
            return yielded, done.value


def test_a_node_s_chat_model_streams_its_tokens_through_the_workflow_and_the_run_s_outcome_is_returned(  # noqa: E501
    workflow: Workflow,
) -> None:
    parts, outcome = streamed(
        workflow.stream("Explain the stone", "t-tokens", stream_mode="messages")
    )
    tokens = [chunk for chunk, _ in parts]
    assert len(tokens) > 1, "token by token, not one message at the end"
    assert all(isinstance(chunk, AIMessageChunk) for chunk in tokens)
    assert "".join(str(chunk.content) for chunk in tokens) == REPLY
    assert {meta["langgraph_node"] for _, meta in parts} == {"talks"}
    assert outcome.state == TaskState.COMPLETED and outcome.thread_id == "t-tokens"
    assert outcome == workflow.outcome("t-tokens"), "what run would have returned"
    assert workflow.state("t-tokens")["tally"] == WordTally(words=len(REPLY.split()))


def test_a_list_of_modes_yields_mode_and_chunk_pairs_as_langgraph_does(
    workflow: Workflow,
) -> None:
    heard: list[str] = []
    parts, _ = streamed(
        workflow.stream(
            "Explain the stone",
            "t-modes",
            stream_mode=["messages", "updates"],
            on_progress=lambda node, _: heard.append(node),
        )
    )
    modes = [mode for mode, _ in parts]
    assert set(modes) == {"messages", "updates"}
    assert modes.index("messages") < modes.index("updates"), "tokens come while the node runs"
    [update] = [chunk for mode, chunk in parts if mode == "updates" and "talks" in chunk]
    assert update["talks"]["tally"] == WordTally(words=len(REPLY.split()))
    assert heard == ["talks"], "the progress a run reports, as run reports it"


def test_a_stream_is_refused_as_a_run_is_before_anything_is_written(
    workflow: Workflow,
) -> None:
    workflow.run("Explain the stone", "t-taken")
    with pytest.raises(ThreadExists, match="t-taken"):
        next(workflow.stream("Explain it again", "t-taken", stream_mode="messages"))
    with pytest.raises(UnknownNode, match="nothing was run"):
        next(workflow.stream("Explain", "t-new", interrupt_before=["nowhere"]))
    with pytest.raises(ThreadNotFound, match="nothing to resume"):
        next(workflow.stream_resume("t-missing", stream_mode="messages"))
    assert workflow.threads() == ["t-taken"]


def test_a_stream_holds_the_thread_s_lock_until_it_ends(
    workflow: Workflow, settings: Settings
) -> None:
    parts = workflow.stream("Explain the stone", "t-held", stream_mode="messages")
    next(parts)  # the run is under way, its node's model mid-reply
    with Workflow(settings, wiring=WIRING) as other:
        with pytest.raises(ThreadBusy):
            other.cancel("t-held", "a second writer")
        _, outcome = streamed(parts)
        with pytest.raises(ThreadFinished):  # let go: the thread is answered, not busy
            other.cancel("t-held", "done with it")
    assert outcome.state == TaskState.COMPLETED


def test_a_resumed_run_streams_its_tokens_and_returns_its_outcome(workflow: Workflow) -> None:
    stopped = workflow.run("Explain the stone", "t-resume", interrupt_before=["talks"])
    assert stopped.state == TaskState.WORKING
    parts, outcome = streamed(workflow.stream_resume("t-resume", stream_mode="messages"))
    assert "".join(str(chunk.content) for chunk, _ in parts) == REPLY
    assert outcome.state == TaskState.COMPLETED == workflow.outcome("t-resume").state


def charged(workflow: Workflow, thread_id: str) -> NodeRun:
    """The one attempt of the model's node."""
    [attempt] = [run for run in workflow.history(thread_id) if run.node_id == "talks"]
    return attempt


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "run"])
def test_a_model_reporting_no_usage_is_charged_an_estimate_marked_as_one(
    workflow: Workflow, streaming: bool
) -> None:
    objective = "Explain the stone"
    if streaming:
        streamed(workflow.stream(objective, "t-silent", stream_mode="messages"))
    else:
        workflow.run(objective, "t-silent")
    usage = charged(workflow, "t-silent").usage
    expected = estimated_tokens(len(objective) + len(REPLY))
    assert usage.tokens == expected > 0, "the budget holds when the model says nothing"
    assert usage.estimated_tokens == expected


def test_a_streaming_model_that_reports_its_usage_is_charged_that_once(
    workflow: Workflow,
) -> None:
    streamed(workflow.stream("Explain the stone (reporting)", "t-said", stream_mode="messages"))
    usage = charged(workflow, "t-said").usage
    assert usage.tokens == REPORTED and usage.estimated_tokens == 0
