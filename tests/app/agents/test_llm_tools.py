"""A model-backed agent calls its node's declared tools through the boundary.

Scripted fake chat models emit the tool calls (langchain-core's, taught to take tools);
the workflow, its SQLite thread, the artifact store and the tool boundary are real.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage

from app.agents import LLMResearchAgent, OfflineResearchAgent
from app.agents.corpus_search import CorpusSearch
from app.agents.ranking import CorpusIndex
from app.agents.replies import ResearchReply
from app.agents.structured import InvalidAgentOutput, Reply, ask
from app.agents.tool_talk import MAX_TOOL_ROUNDS, ToolTalk
from app.storage.artifacts import FilesystemArtifactStore
from app.workflow import Workflow
from contracts import ErrorCode, NodeRun, ResearchBundle, SearchCorpusInput, SearchHit, TaskSpec
from graphs import ResearchRequest, StepInfo
from graphs.nodes.research import research
from graphs.tools import Toolbox, ToolEnv
from tests.app.agents.scripted import (
    PromptLog,
    ToolCallingFake,
    calling,
    claims,
    reply,
    scripted,
    scripted_with_tools,
)
from tests.conftest import OBJECTIVE

FIXED = datetime(2026, 1, 1, tzinfo=UTC)
QUERY = "When was the Rosetta Stone found, and by whom?"
TASK = TaskSpec(task_id="t-tools", objective=OBJECTIVE)


def _step() -> StepInfo:
    return StepInfo(thread_id="probe", node="research", step=1, task_version=1)


def _retrieval(workflow: Workflow) -> OfflineResearchAgent:
    agent = workflow.context.agents["research"]
    assert isinstance(agent, OfflineResearchAgent)
    return agent


def _unshown_hit(workflow: Workflow, tmp_path: Path) -> SearchHit:
    """A sentence a search for QUERY finds that research showing one passage does not show."""
    store = FilesystemArtifactStore(tmp_path / "probe")
    found = _retrieval(workflow).retrieve(ResearchRequest(TASK, store, _step()))
    index = CorpusIndex(found.passages, found.rarity, min_shared_terms=2)
    env = ToolEnv(store=store, step=_step(), clock=lambda: FIXED)
    hits = CorpusSearch(index)(SearchCorpusInput(query=QUERY, limit=20), env).hits
    shown = found.passages[found.ranked["q-1"][0][0]]
    where = (shown.source.id, shown.sentence.start)
    return next(hit for hit in hits if (hit.source_id, hit.start) != where)


@dataclass
class ResearchRun:
    """What a research step by a scripted model left: its bundle, audit and prompts."""

    bundle: ResearchBundle
    runs: list[NodeRun]
    model: ToolCallingFake
    log: PromptLog


def _run_research(workflow: Workflow, thread: str, *replies: AIMessage) -> ResearchRun:
    """Run the workflow with research by a model shown one passage, scripted by ``replies``."""
    model, log = scripted_with_tools(*replies)
    agent = LLMResearchAgent(model, _retrieval(workflow), max_passages=1)
    context = workflow.context.with_agent("research", agent)
    with Workflow(workflow.settings, context=context) as llm:
        llm.run(TASK.model_copy(update={"task_id": thread}), thread)
        bundle = llm.state(thread)["research"]
        runs = [run for run in llm.history(thread) if run.node_id == "research"]
    return ResearchRun(bundle, runs, model, log)


def _quoting(hit: SearchHit) -> AIMessage:
    return reply(claims({"claim": hit.text, "source_id": hit.source_id, "quote": hit.text}))


def test_a_model_quotes_what_its_search_found_and_its_refused_calls_are_answered_and_audited(
    workflow: Workflow, tmp_path: Path
) -> None:
    hit = _unshown_hit(workflow, tmp_path)
    first = calling(
        ("search_corpus", {"query": QUERY}),
        ("delete_everything", {"path": "/"}),
        ("search_corpus", {"query": ""}),
    )
    done = _run_research(workflow, "t-search", first, _quoting(hit))
    offered = [tool["function"]["name"] for tool in done.model.offered]
    wired = next(spec for spec, _ in workflow.wiring if spec.name == research.name)
    assert offered == [tool.name for tool in wired.tools], "the tools the wiring gives research"
    assert [(fact.source_id, fact.quote) for fact in done.bundle.facts] == [
        (hit.source_id, hit.text)
    ]
    [run] = done.runs
    model_calls = [(r.tool, r.cost, r.error and r.error.code) for r in run.tool_receipts[-3:]]
    assert model_calls == [
        ("search_corpus", 1, None),
        ("delete_everything", 0, "permission_denied"),
        ("search_corpus", 0, "fix_arguments"),
    ]
    assert run.tool_receipts[-1].error is not None
    assert run.tool_receipts[-1].error.field == "query"
    assert run.usage.tool_calls == sum(receipt.cost for receipt in run.tool_receipts)
    answers = [m for m in done.log.prompts[1] if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status) for m in answers] == [
        ("call_1", "success"),
        ("call_2", "error"),
        ("call_3", "error"),
    ]
    assert hit.text in [found["text"] for found in json.loads(str(answers[0].content))["hits"]]
    refused = [json.loads(str(m.content))["error"] for m in answers[1:]]
    assert [(e["code"], e["retryable"]) for e in refused] == [
        ("permission_denied", False),
        ("fix_arguments", False),
    ]
    assert "Traceback" not in "".join(str(m.content) for m in answers)


def test_without_its_own_search_the_same_quote_is_dropped_as_not_shown(
    workflow: Workflow, tmp_path: Path
) -> None:
    hit = _unshown_hit(workflow, tmp_path)
    done = _run_research(workflow, "t-no-search", _quoting(hit))
    assert done.bundle.facts == []
    assert ErrorCode.QUOTE_NOT_FOUND in {error.code for error in done.bundle.errors}


def _toolbox(tmp_path: Path, workflow: Workflow) -> Toolbox:
    """Research's tools outside a node, its search over the bundled corpus."""
    store = FilesystemArtifactStore(tmp_path / "box")
    found = _retrieval(workflow).retrieve(ResearchRequest(TASK, store, _step()))
    env = ToolEnv(store=store, step=_step(), clock=lambda: FIXED)
    toolbox = Toolbox(node=research.name, tools=research.tools, env=env)
    index = CorpusIndex(found.passages, found.rarity, min_shared_terms=2)
    toolbox.provide("search_corpus", CorpusSearch(index))
    return toolbox


def _ask(model: BaseChatModel, toolbox: Toolbox) -> Reply[ResearchReply]:
    where = {"node": "research", "channel": "research"}
    return ask(model, [], ResearchReply, **where, tokens_left=None, tools=toolbox)


def test_a_model_still_calling_tools_after_its_rounds_has_not_answered(
    workflow: Workflow, tmp_path: Path
) -> None:
    toolbox = _toolbox(tmp_path, workflow)
    again = [calling(("search_corpus", {"query": QUERY})) for _ in range(MAX_TOOL_ROUNDS + 1)]
    model, _ = scripted_with_tools(*again)
    with pytest.raises(InvalidAgentOutput, match="still called tools") as raised:
        _ask(model, toolbox)
    assert raised.value.fields == ["tool_calls"]
    assert raised.value.usage.tokens == 50 * (MAX_TOOL_ROUNDS + 1)
    assert [receipt.tool for receipt in toolbox.receipts] == ["search_corpus"] * MAX_TOOL_ROUNDS


def test_a_model_without_tool_calling_is_asked_without_tools(
    workflow: Workflow, tmp_path: Path
) -> None:
    toolbox = _toolbox(tmp_path, workflow)
    model, _ = scripted(reply(claims()))
    assert ToolTalk.offer(model, toolbox) is None
    answered = _ask(model, toolbox)
    assert answered.value.claims == [] and answered.consulted == [] and toolbox.receipts == []
