"""Offline research: real BM25 over real files; facts are verbatim quotes with spans."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.agents import OfflineResearchAgent
from app.artifacts import FilesystemArtifactStore
from app.settings import BUNDLED_CORPUS, Settings
from app.text import terms
from contracts import ErrorCode, TaskSpec
from graphs import ResearchRequest, StepInfo
from tests.conftest import OBJECTIVE, write_corpus

FIXED = datetime(2026, 1, 1, tzinfo=UTC)


def _agent(root: Path) -> OfflineResearchAgent:
    """Research on the bundled corpus that may also read this test's folder ``root``."""
    policy = Settings(corpus_roots=[root]).corpus_policy()
    return OfflineResearchAgent(default_corpus=[BUNDLED_CORPUS], clock=lambda: FIXED, policy=policy)


def _step(thread: str = "t") -> StepInfo:
    return StepInfo(thread_id=thread, node="research", step=1, task_version=1)


def _run(tmp_path: Path, task: TaskSpec) -> tuple[FilesystemArtifactStore, object]:
    store = FilesystemArtifactStore(tmp_path / "artifacts")
    return store, _agent(tmp_path).run(ResearchRequest(task, None, store, _step())).result


def test_facts_are_verbatim_quotes_at_their_spans_in_the_snapshots(tmp_path: Path) -> None:
    store, bundle = _run(tmp_path, TaskSpec(task_id="t", objective=OBJECTIVE))
    assert bundle.result_status == "completed"
    assert 5 <= len(bundle.facts) <= 10
    for fact in bundle.facts:
        source = bundle.source(fact.source_id)
        text = store.get(source.snapshot).decode()
        assert text[fact.span.start : fact.span.end] == fact.quote
        assert fact.provenance.producer == "research"


def test_confidence_follows_the_documented_rule(tmp_path: Path) -> None:
    store, bundle = _run(tmp_path, TaskSpec(task_id="t", objective=OBJECTIVE))
    assert {fact.confidence for fact in bundle.facts} >= {"high"}
    for fact in bundle.facts:
        if fact.confidence == "high":
            assert fact.corroborating_source_ids
            claim_terms = set(terms(fact.quote))
            for source_id in fact.corroborating_source_ids:
                assert source_id != fact.source_id
                other = store.get(bundle.source(source_id).snapshot).decode()
                assert len(claim_terms & set(terms(other))) / len(claim_terms) >= 0.5
        else:
            assert fact.corroborating_source_ids == []


def test_research_is_deterministic(tmp_path: Path) -> None:
    task = TaskSpec(task_id="t", objective=OBJECTIVE)
    _, first = _run(tmp_path / "one", task)
    _, second = _run(tmp_path / "two", task)
    assert first.model_dump() == second.model_dump()


def test_an_unreadable_source_makes_research_partial_and_keeps_other_ids(tmp_path: Path) -> None:
    corpus = write_corpus(
        tmp_path / "corpus",
        {
            "a-good.md": "# Bees\n\nHoney bees perform the waggle dance to share flowers.\n",
            "b-broken.md": "placeholder",
            "c-good.md": "# More bees\n\nThe waggle dance of honey bees encodes distance.\n",
        },
    )
    (corpus / "b-broken.md").write_bytes(b"\xff\xfe\x00 not utf-8 \xc3\x28")
    task = TaskSpec(
        task_id="t", objective="Explain the honey bee waggle dance", corpus=[str(corpus)]
    )
    _, bundle = _run(tmp_path, task)
    assert bundle.result_status == "partial"
    assert [(error.code, error.source_id) for error in bundle.errors] == [
        (ErrorCode.SOURCE_UNREADABLE, "src-2")
    ]
    assert [source.id for source in bundle.sources] == ["src-1", "src-3"]
    assert bundle.facts and bundle.retryable


def test_nothing_relevant_fails_with_insufficient_evidence(tmp_path: Path) -> None:
    task = TaskSpec(task_id="t", objective="Describe quantum chromodynamics of gluons")
    _, bundle = _run(tmp_path, task)
    assert bundle.result_status == "failed"
    assert bundle.facts == []
    assert [error.code for error in bundle.errors] == [ErrorCode.INSUFFICIENT_EVIDENCE]
    assert [question.text for question in bundle.open_questions] == [task.objective]


def test_questions_without_evidence_become_open_questions(tmp_path: Path) -> None:
    task = TaskSpec(
        task_id="t",
        objective=OBJECTIVE,
        questions=["Who found the Rosetta Stone in 1799?", "What did the pharaoh eat for lunch?"],
    )
    _, bundle = _run(tmp_path, task)
    assert [question.id for question in bundle.open_questions] == ["q-2"]
    assert {fact.question_id for fact in bundle.facts} == {"q-1"}


def test_a_missing_corpus_fails_naming_the_location(tmp_path: Path) -> None:
    task = TaskSpec(task_id="t", objective=OBJECTIVE, corpus=[str(tmp_path / "absent")])
    _, bundle = _run(tmp_path, task)
    assert bundle.result_status == "failed"
    assert bundle.errors[0].code == ErrorCode.MISSING_INPUT
    assert "absent" in bundle.errors[0].detail
    assert bundle.missing_inputs == [str(tmp_path / "absent")]


@pytest.mark.parametrize("name", ["notes.pdf"])
def test_a_corpus_file_of_another_type_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"%PDF")
    task = TaskSpec(task_id="t", objective=OBJECTIVE, corpus=[str(tmp_path / name)])
    _, bundle = _run(tmp_path, task)
    assert bundle.result_status == "failed"
    assert ".md or .txt" in bundle.errors[0].detail


def test_source_snapshots_are_reused_when_research_repeats(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path / "artifacts")
    task = TaskSpec(task_id="t", objective=OBJECTIVE)
    first = _agent(tmp_path).run(ResearchRequest(task, None, store, _step())).result
    second = _agent(tmp_path).run(ResearchRequest(task, None, store, _step())).result
    assert [s.snapshot for s in first.sources] == [s.snapshot for s in second.sources]
    assert all(len(store.history(s.snapshot.artifact_id)) == 1 for s in second.sources)
