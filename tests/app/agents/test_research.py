"""Offline research: real BM25 over real files; facts are verbatim quotes with spans."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.agents import OfflineResearchAgent
from app.agents.research import paused_cycle_collection
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.artifacts import FilesystemArtifactStore
from app.text.primitives import terms
from contracts import ErrorCode, TaskSpec
from graphs import ResearchRequest, StepInfo
from graphs.errors import SourceRefused
from tests.app.agents.howto import research_and_write
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
    return store, _agent(tmp_path).run(ResearchRequest(task, store, _step())).result


def test_facts_are_verbatim_quotes_at_their_spans_in_the_snapshots(tmp_path: Path) -> None:
    store, bundle = _run(tmp_path, TaskSpec(task_id="t", objective=OBJECTIVE))
    assert bundle.result_status == "completed"
    assert 5 <= len(bundle.facts) <= 12
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
    assert [(q.id, q.text) for q in bundle.open_questions] == [
        ("q-3", "What did the pharaoh eat for lunch?")
    ]
    assert {question for fact in bundle.facts for question in fact.answers} == {"q-1", "q-2"}
    assert bundle.result_status == "partial", "an open question is a partial result"


def test_a_sub_question_adds_to_the_objective_and_never_replaces_it(tmp_path: Path) -> None:
    task = TaskSpec(task_id="t", objective=OBJECTIVE, questions=["Who was Thomas Young?"])
    _, bundle = _run(tmp_path, task)
    assert task.research_questions() == [OBJECTIVE, "Who was Thomas Young?"]
    answered = {question for fact in bundle.facts for question in fact.answers}
    assert answered == {"q-1", "q-2"} and not bundle.open_questions


BEES = {
    "frisch.md": "# Karl von Frisch\n\n## Experiments\n\n"
    "Karl von Frisch trained honeybees to visit dishes of sugar water. "
    "He showed that a forager dances to tell her nestmates where the food is.\n\n"
    "Von Frisch shared the Nobel Prize in 1973 for his work on bee behaviour.\n",
    "drones.md": "# Drones\n\nDrones are the male bees of the colony and do not forage.\n",
}


@pytest.mark.parametrize(
    "question",
    ["What did von Frisch eat for lunch?", "What colour are drones?"],
)
def test_a_question_naming_corpus_words_but_asking_what_it_never_says_stays_open(
    tmp_path: Path, question: str
) -> None:
    corpus = write_corpus(tmp_path / "bees", BEES)
    task = TaskSpec(
        task_id="t",
        objective="Explain von Frisch's honeybee experiments",
        questions=[question],
        corpus=[str(corpus)],
    )
    _, bundle = _run(tmp_path, task)
    assert [q.text for q in bundle.open_questions] == [question]
    assert not any("q-2" in fact.answers for fact in bundle.facts)


def test_a_leaning_sentence_comes_with_the_one_it_leans_on(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "bees", BEES)
    task = TaskSpec(
        task_id="t",
        objective="How does a forager tell nestmates where food is?",
        corpus=[str(corpus)],
    )
    store, bundle = _run(tmp_path, task)
    leaning = next(fact for fact in bundle.facts if fact.quote.startswith("He showed"))
    antecedent = bundle.fact(leaning.leans_on or "")
    assert antecedent is not None and antecedent.quote.startswith("Karl von Frisch trained")
    assert leaning.section == ["Karl von Frisch", "Experiments"]
    assert leaning.lines is not None and leaning.lines.first == leaning.lines.last == 5


README = """# ferrule

[![PyPI](https://img.shields.io/pypi/v/ferrule.svg)](https://pypi.org/project/ferrule/)

<p align="center"><img src="logo.png" alt="ferrule"></p>

ferrule is a task queue that keeps its tasks in one SQLite file, e.g. ferrule.db in the
working directory.

$ pip install ferrule

```python
queue = ferrule.Queue("ferrule.db")  # the queue keeps tasks in SQLite
```

| variable | default | meaning |
|---|---|---|
| FERRULE_DB | ferrule.db | the SQLite file that keeps the tasks |

```bibtex
@software{ferrule, title = {ferrule keeps tasks in SQLite}}
```
"""


def test_code_tables_badges_html_and_bibtex_never_become_facts(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "readme", {"README.md": README})
    task = TaskSpec(
        task_id="t", objective="Where does ferrule keep its tasks?", corpus=[str(corpus)]
    )
    _, bundle = _run(tmp_path, task)
    assert [fact.quote for fact in bundle.facts] == [
        "ferrule is a task queue that keeps its tasks in one SQLite file, e.g. ferrule.db "
        "in the\nworking directory."
    ]


def test_a_missing_corpus_is_refused_naming_the_location(tmp_path: Path) -> None:
    task = TaskSpec(task_id="t", objective=OBJECTIVE, corpus=[str(tmp_path / "absent")])
    with pytest.raises(SourceRefused, match=rf"corpus path {tmp_path / 'absent'} does not exist"):
        _run(tmp_path, task)


def test_a_corpus_without_documents_is_refused_naming_the_location(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    task = TaskSpec(task_id="t", objective=OBJECTIVE, corpus=[str(tmp_path / "empty")])
    with pytest.raises(SourceRefused, match=rf"corpus {tmp_path / 'empty'} holds no document"):
        _run(tmp_path, task)


@pytest.mark.parametrize("name", ["notes.pdf"])
def test_a_corpus_file_of_another_type_is_refused(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"%PDF")
    task = TaskSpec(task_id="t", objective=OBJECTIVE, corpus=[str(tmp_path / name)])
    with pytest.raises(SourceRefused, match="is not a document this workflow reads"):
        _run(tmp_path, task)


def test_source_snapshots_are_reused_when_research_repeats(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path / "artifacts")
    task = TaskSpec(task_id="t", objective=OBJECTIVE)
    first = _agent(tmp_path).run(ResearchRequest(task, store, _step())).result
    second = _agent(tmp_path).run(ResearchRequest(task, store, _step())).result
    assert [s.snapshot for s in first.sources] == [s.snapshot for s in second.sources]
    assert all(len(store.history(s.snapshot.artifact_id)) == 1 for s in second.sources)


def test_a_bold_run_in_heading_is_a_label_not_a_fact(tmp_path: Path) -> None:
    text = (
        "# Workers\n\n**Running many workers at once.** Workers share one database and each "
        "worker runs a different thread.\n"
    )
    corpus = write_corpus(tmp_path / "docs", {"workers.md": text})
    task = TaskSpec(task_id="t", objective="How do workers share a database?", corpus=[str(corpus)])
    _, bundle = _run(tmp_path, task)
    assert [fact.quote for fact in bundle.facts] == [
        "Workers share one database and each worker runs a different thread."
    ]


def test_a_sentence_whose_source_is_longer_than_a_quote_may_be_is_no_fact(
    tmp_path: Path,
) -> None:
    """Its visible words are few, its links' addresses many: a fact could not hold it."""
    link = "[the worker guide](https://example.org/" + "guide/" * 70 + ")"
    text = (
        "# Workers\n\nWorkers share one database, as " + ", ".join([link] * 6) + " explain.\n\n"
        "Each worker runs a different thread of the shared database.\n"
    )
    corpus = write_corpus(tmp_path / "docs", {"workers.md": text})
    task = TaskSpec(task_id="t", objective="How do workers share a database?", corpus=[str(corpus)])
    _, bundle = _run(tmp_path, task)
    assert bundle.result_status == "completed"
    assert [fact.quote for fact in bundle.facts] == [
        "Each worker runs a different thread of the shared database."
    ]


def test_the_notes_name_each_source_file_a_reader_can_open(tmp_path: Path) -> None:
    store, bundle = _run(tmp_path, TaskSpec(task_id="t", objective=OBJECTIVE))
    notes = store.get(bundle.artifact_refs[0]).decode()
    for source in bundle.sources:
        assert f"- {source.id}: *{source.title}*, " in notes
    assert "[src-4 the-rosetta-stone.md, lines " in notes


HOWTO = """\
# Workers

## Registering a worker

To register a worker with the scheduler, run the following command on the worker's host:

```bash
$ ferrule register --scheduler tcp://10.0.0.5:7000
```

The options of the register command for a worker are these:

- --scheduler names the scheduler of the worker.
"""


def test_a_sentence_introducing_a_code_example_is_a_fact_with_its_example(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path / "docs", {"workers.md": HOWTO})
    task = TaskSpec(
        task_id="t",
        objective="How do I register a worker with the scheduler?",
        corpus=[str(corpus)],
    )
    store, bundle = _run(tmp_path, task)
    introducing = [fact for fact in bundle.facts if fact.quote.endswith(":")]
    assert [fact.quote for fact in introducing] == [
        "To register a worker with the scheduler, run the following command on the worker's host:"
    ]
    example = introducing[0].example
    assert example is not None
    text = store.get(bundle.source(introducing[0].source_id).snapshot).decode()
    assert text[example.span.start : example.span.end] == example.text
    assert example.text.startswith("```bash\n") and example.text.endswith("\n```")
    assert example.shown == "$ ferrule register --scheduler tcp://10.0.0.5:7000"
    assert (example.media_type, example.lines.first, example.lines.last) == (
        "text/x-shellscript",
        7,
        9,
    )
    assert all(fact.example is None for fact in bundle.facts if fact not in introducing)


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_research_pauses_the_cycle_collector_and_leaves_it_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    seen: list[bool] = []
    retrieve = OfflineResearchAgent.retrieve

    def watched(self: OfflineResearchAgent, request: ResearchRequest) -> object:
        seen.append(gc.isenabled())
        return retrieve(self, request)

    monkeypatch.setattr(OfflineResearchAgent, "retrieve", watched)
    (gc.enable if enabled else gc.disable)()
    try:
        _run(tmp_path, TaskSpec(task_id="t", objective=OBJECTIVE))
        assert seen == [False]  # paused while research ran
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_research_branches_that_cross_leave_the_cycle_collector_on() -> None:
    """Branches run research at once in threads: the first may end while the second runs,
    and the second end after it; the collector stays paused until the last ends, then on."""
    gc.enable()
    first, second = paused_cycle_collection(), paused_cycle_collection()
    try:
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert not gc.isenabled(), "still paused: the second branch runs"
        second.__exit__(None, None, None)
        assert gc.isenabled()
    finally:
        gc.enable()


KILN_HISTORY = """\
# kiln

kiln was first released as a command line tool for batch image jobs.
Its first release could only make thumbnails, and later releases added recipes.
"""


def test_a_question_asking_a_year_stays_open_when_no_sentence_on_its_subject_holds_one(
    tmp_path: Path,
) -> None:
    question = "In which year was kiln first released?"
    undated = research_and_write(tmp_path / "undated", text=KILN_HISTORY, question=question)
    dated_text = KILN_HISTORY.replace("image jobs.", "image jobs in 2019.")
    dated = research_and_write(tmp_path / "dated", text=dated_text, question=question)

    assert [item.text for item in undated.bundle.open_questions] == [question]
    assert dated.bundle.open_questions == []
    assert any("2019" in fact.quote for fact in dated.bundle.facts)


KILN_GUIDE = """\
# kiln

kiln is a small tool that runs batch jobs on folders of images.

## Starting jobs

To start a kiln job on a folder, run the kiln start command with a recipe name.
A started job runs in the background until every image of the folder is done.
"""


def test_the_objective_is_answered_with_what_its_subject_is_when_the_corpus_says_it(
    tmp_path: Path,
) -> None:
    objective = "Explain how to start kiln jobs"
    written = research_and_write(tmp_path, text=KILN_GUIDE, question=objective)

    [defining] = [fact for fact in written.bundle.facts if fact.quote.startswith("kiln is a")]
    assert "q-1" in defining.answers
    assert defining.id in written.draft.cited_claim_ids


def test_the_objective_is_answered_by_what_its_sources_say_together_not_by_asides(
    tmp_path: Path,
) -> None:
    """Every document of the bundled corpus names the stone and the decipherment; the
    sentences explaining it share their other terms (Demotic, Greek, cartouches) across
    sections, while a petition for the stone's return or a museum shares them with none."""
    _, bundle = _run(tmp_path, TaskSpec(task_id="t", objective=OBJECTIVE))
    quotes = " ".join(fact.quote for fact in bundle.facts)
    assert "petition" not in quotes and "Museum" not in quotes
    assert "Demotic" in quotes and "cartouche" in quotes and "Greek words" in quotes
