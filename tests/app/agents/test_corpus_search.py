"""Research searches through the declared ``search_corpus`` tool: checked, charged, receipted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.agents import OfflineResearchAgent
from app.agents.corpus_search import CorpusSearch
from app.agents.ranking import CorpusIndex
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.artifacts import FilesystemArtifactStore
from contracts import ErrorCode, SearchCorpusInput, SearchCorpusOutput, TaskSpec
from graphs import ResearchRequest, StepInfo
from graphs.nodes.research import research
from graphs.tools import READ_SOURCE, SEARCH_CORPUS, Toolbox, ToolEnv
from tests.conftest import OBJECTIVE

FIXED = datetime(2026, 1, 1, tzinfo=UTC)


def _agent() -> OfflineResearchAgent:
    policy = Settings().corpus_policy()
    return OfflineResearchAgent(default_corpus=[BUNDLED_CORPUS], clock=lambda: FIXED, policy=policy)


def _step(tool_calls_left: int | None = None) -> StepInfo:
    return StepInfo(
        thread_id="t", node="research", step=1, task_version=1, tool_calls_left=tool_calls_left
    )


def test_each_question_is_searched_once_through_the_tool_and_its_hits_are_verbatim(
    tmp_path: Path,
) -> None:
    store = FilesystemArtifactStore(tmp_path / "artifacts")
    task = TaskSpec(task_id="t", objective=OBJECTIVE, questions=["Who found the stone?"])
    found = _agent().retrieve(ResearchRequest(task, store, _step()))
    searches = [receipt for receipt in found.receipts if receipt.tool == SEARCH_CORPUS.name]
    assert [receipt.call_id for receipt in searches] == ["search-q-1", "search-q-2"]
    assert all(receipt.cost == 1 and receipt.error is None for receipt in searches)
    assert found.tool_calls == len(found.receipts)  # reads and searches, all charged
    assert found.ranked["q-1"], "the objective is answered on the bundled corpus"
    for hits in found.ranked.values():  # what the search found is what research ranks by
        for index, _ in hits:
            passage = found.passages[index]
            text = found.texts[passage.source.id]
            assert text[passage.sentence.start : passage.sentence.end] == passage.sentence.text


def test_the_search_answers_sentences_at_their_spans_and_nothing_for_what_none_addresses(
    tmp_path: Path,
) -> None:
    store = FilesystemArtifactStore(tmp_path / "artifacts")
    found = _agent().retrieve(
        ResearchRequest(TaskSpec(task_id="t", objective=OBJECTIVE), store, _step())
    )
    search = CorpusSearch(CorpusIndex(found.passages, found.rarity, min_shared_terms=2))
    env = ToolEnv(store=store, step=_step(), clock=lambda: FIXED)
    output = search(SearchCorpusInput(query="Who deciphered the hieroglyphs?", limit=3), env)
    assert 1 <= len(output.hits) <= 3
    for hit in output.hits:
        assert found.texts[hit.source_id][hit.start : hit.end] == hit.text
    nothing = search(SearchCorpusInput(query="What do bananas cost in Lima markets?"), env)
    assert nothing.hits == []


def test_a_search_the_budget_does_not_allow_leaves_its_question_open_and_says_why(
    tmp_path: Path,
) -> None:
    store = FilesystemArtifactStore(tmp_path / "artifacts")
    task = TaskSpec(task_id="t", objective=OBJECTIVE)
    found = _agent().retrieve(ResearchRequest(task, store, _step(tool_calls_left=0)))
    refused = [receipt for receipt in found.receipts if receipt.tool == SEARCH_CORPUS.name]
    assert [(r.call_id, r.cost, r.error and r.error.code) for r in refused] == [
        ("search-q-1", 0, "budget_exhausted")
    ]
    assert found.ranked == {"q-1": []}
    searched = [error for error in found.errors if "could not search for q-1" in error.detail]
    assert [(e.code, e.field) for e in searched] == [
        (ErrorCode.BUDGET_EXHAUSTED, "budget.max_tool_calls")
    ]


def test_only_a_declared_tool_without_code_of_its_own_may_be_given_code(tmp_path: Path) -> None:
    env = ToolEnv(store=FilesystemArtifactStore(tmp_path), step=_step(), clock=lambda: FIXED)
    toolbox = Toolbox(node=research.name, tools=research.tools, env=env)
    with pytest.raises(TypeError, match=r"does not declare tool 'export_article'"):
        toolbox.provide("export_article", lambda args, env: SearchCorpusOutput())
    own = SEARCH_CORPUS.__class__(
        name="searching", input=SearchCorpusInput, output=SearchCorpusOutput, run=CorpusSearch
    )
    with pytest.raises(TypeError, match="brings its own code"):
        Toolbox(node="n", tools=(own,), env=env).provide("searching", CorpusSearch)
    assert [spec.name for spec in research.tools] == [READ_SOURCE.name, SEARCH_CORPUS.name]
