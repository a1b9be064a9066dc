"""The research join merges its branches' bundles by fixed rules, the same every time."""

from __future__ import annotations

from pathlib import Path

from app.storage.artifacts.filesystem import FilesystemArtifactStore
from contracts import ErrorCode, ErrorDetail, Fact, Question, ResearchBundle, Source, TaskSpec
from graphs.nodes.join_research import merge_bundles
from graphs.ports import ArtifactStore, StepInfo
from tests.contracts.examples import EXAMPLES

STEP = StepInfo(thread_id="t", node="join_research", step=2, task_version=1)


def branch(
    store: ArtifactStore,
    key: str,
    facts: list[Fact],
    *,
    sources: list[Source] | None = None,
    open_questions: list[Question] | None = None,
    errors: list[ErrorDetail] | None = None,
) -> ResearchBundle:
    example = EXAMPLES[ResearchBundle]
    notes = store.put(f"t-notes-{key}", "notes", f"# notes of {key}\n".encode(), "text/markdown")
    return ResearchBundle(
        task_id=example.task_id,
        result_status="failed" if not facts else ("partial" if open_questions else "completed"),
        facts=facts,
        sources=sources if sources is not None else example.sources,
        open_questions=open_questions or [],
        artifact_refs=[notes],
        errors=errors or [],
    )


def fact(claim: str, question: str, source: str = "src-1") -> Fact:
    base = EXAMPLES[ResearchBundle].facts[0]
    return base.model_copy(update={"id": claim, "question_id": question, "source_id": source})


def test_a_fact_two_branches_found_is_kept_once_answering_both(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path)
    one = branch(store, "q-1", [fact("claim-2", "q-1"), fact("claim-1", "q-1")])
    two = branch(store, "q-2", [fact("claim-1", "q-2")])
    merged = merge_bundles(EXAMPLES[TaskSpec], [one, two], store, STEP)
    assert [f.id for f in merged.facts] == ["claim-2", "claim-1"], "in the order found"
    found_twice = merged.fact("claim-1")
    assert found_twice is not None and found_twice.answers == ["q-1", "q-2"]
    assert merged.result_status == "completed"
    assert merge_bundles(EXAMPLES[TaskSpec], [one, two], store, STEP) == merged


def test_notes_of_every_branch_become_the_threads_one_notes_artifact(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path)
    bundles = [branch(store, key, [fact("claim-1", key)]) for key in ("q-1", "q-2")]
    [notes] = merge_bundles(EXAMPLES[TaskSpec], bundles, store, STEP).artifact_refs
    assert notes.artifact_id == "t-notes"
    assert store.get(notes).decode() == "# notes of q-1\n\n# notes of q-2\n"


def test_a_question_without_facts_stays_open_while_others_have_facts(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path)
    question = Question(id="q-2", text="Who found it?")
    none = ErrorDetail(code=ErrorCode.INSUFFICIENT_EVIDENCE, detail="no sentence addresses q-2")
    found = branch(store, "q-1", [fact("claim-1", "q-1")])
    empty = branch(store, "q-2", [], open_questions=[question], errors=[none])
    merged = merge_bundles(EXAMPLES[TaskSpec], [found, empty], store, STEP)
    assert merged.result_status == "partial" and merged.open_questions == [question]
    assert merged.errors == [], "too little evidence is about the whole, not one question"
    nothing = merge_bundles(EXAMPLES[TaskSpec], [empty, empty], store, STEP)
    assert nothing.result_status == "failed" and nothing.errors == [none]


def test_a_source_two_branches_read_with_different_bytes_is_a_stale_input(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path)
    source = EXAMPLES[ResearchBundle].sources[0]
    edited = source.model_copy(update={"sha256": "ab" * 32})
    one = branch(store, "q-1", [fact("claim-1", "q-1")], sources=[source])
    two = branch(store, "q-2", [fact("claim-2", "q-2")], sources=[edited])
    merged = merge_bundles(EXAMPLES[TaskSpec], [one, two], store, STEP)
    assert merged.sources == [source]
    assert [(e.code, e.source_id) for e in merged.errors] == [(ErrorCode.STALE_INPUT, "src-1")]
    assert merged.result_status == "partial"
