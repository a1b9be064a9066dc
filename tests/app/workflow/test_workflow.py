"""End-to-end runs on every backend: real SQLite files, real PostgreSQL schemas."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from langgraph.config import get_stream_writer

from app.errors import (
    CheckpointNotLatest,
    InvalidThreadId,
    ThreadExists,
    ThreadNotFound,
    UnknownArtifactName,
)
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.thread_reads import GlanceSaver
from app.text.primitives import CITATION
from app.workflow import Workflow
from app.workflow.progress import step_summary
from contracts import ResearchBundle, RunOutcome, TaskState, VersionedContract
from graphs import node, workflow_channels
from graphs.routing import STOP
from tests.backends import sqlite_settings
from tests.conftest import OBJECTIVE, nodes_run, passes, write_corpus
from tests.graphs.test_declare import TallyInput, TallyOutput, WordTally
from tests.graphs.test_freshness import read_summary, summarize

SECOND_CORPUS = {
    "honeybees.md": (
        "# Honey bees\n\n"
        "Honey bees communicate the direction of flowers to their nestmates with the waggle dance. "
        "Karl von Frisch described the waggle dance of honey bees in detail during the 1940s. "
        "A honey bee colony usually has one queen, thousands of workers and some drones.\n"
    ),
    "pollination.txt": (
        "Pollination by honey bees supports many fruit and nut crops around the world. "
        "The waggle dance encodes distance by its duration and direction by its angle to gravity. "
        "Almond orchards in California depend heavily on managed honey bee colonies.\n"
    ),
}


def test_default_run_completes_research_writer_reviewer_on_the_bundled_corpus(
    workflow: Workflow,
) -> None:
    outcome = workflow.run(OBJECTIVE, "t-default")
    assert outcome.state == TaskState.COMPLETED
    assert outcome.result_status == "completed"
    assert outcome.article is not None
    path = ("research", "join_research", "writer", "reviewer", "finalize")
    assert passes(nodes_run(workflow, "t-default"), *path) == [*path]
    article = workflow.artifact("t-default", "article")
    assert hashlib.sha256(article).hexdigest() == outcome.article.sha256
    assert article.startswith(b"# Explain how the Rosetta Stone")
    assert CITATION.search(article.decode())


def test_every_checkpoint_value_is_a_valid_contract_and_loads_without_serde_warnings(
    workflow: Workflow,
) -> None:
    workflow.run(OBJECTIVE, "t-history")
    events: list[Any] = []
    unregister = register_serde_event_listener(events.append)
    try:
        with Workflow(workflow.settings) as reopened:  # load from the file, not from memory
            states = list(reopened.graph.get_state_history(reopened.config("t-history")))
    finally:
        unregister()
    assert events == [], f"serializer allowlist incomplete: {events}"
    assert len(states) >= 5
    for snapshot in states:
        for channel, value in snapshot.values.items():
            model = workflow_channels()[channel].contract
            for item in value if isinstance(value, list) else [value]:
                if item is None:
                    continue
                assert isinstance(item, VersionedContract), f"{channel} came back as {type(item)}"
                model.model_validate(item)


def _largest_checkpoint_bytes(workflow: Workflow, thread_id: str) -> int:
    """Largest serialized checkpoint: the full channel values a checkpoint names (the
    savers store each value once per version, so this is what a read of it decodes)."""
    sizes = []
    for item in workflow.saver.list(workflow.config(thread_id)):
        _, checkpoint = workflow.saver.serde.dumps_typed(item.checkpoint)
        sizes.append(len(checkpoint) + len(json.dumps(item.metadata, default=str)))
    return max(sizes)


@pytest.mark.slow
def test_largest_checkpoint_stays_under_20kb_with_a_5mb_document_in_the_corpus(
    tmp_path: Path, settings: Settings
) -> None:
    corpus = write_corpus(tmp_path / "big", {})
    for path in BUNDLED_CORPUS.glob("*.md"):
        (corpus / path.name).write_bytes(path.read_bytes())
    filler = "".join(
        f"Filler paragraph {n} talks about the weather in harbour town number {n}.\n\n"
        for n in range(80_000)
    )
    (corpus / "zz-large.md").write_text("# Large document\n\n" + filler, encoding="utf-8")
    assert (corpus / "zz-large.md").stat().st_size > 5_000_000
    with Workflow(settings) as workflow:
        outcome = workflow.run(workflow.task(OBJECTIVE, corpus=[str(corpus)]), "t-big")
        assert outcome.result_status == "completed"
        bundle = workflow.state("t-big")["research"]
        large = next(source for source in bundle.sources if source.title == "Large document")
        assert large.snapshot.size_bytes > 5_000_000, "the large source is held by reference"
        # Each source's path is in the checkpoint several times: the bound leaves room for a
        # long temporary folder (a test worker's), and is still 250 times below the document.
        assert _largest_checkpoint_bytes(workflow, "t-big") < 20 * 1024


@pytest.mark.parametrize("corpus_name", ["bundled", "built_in_test"])
def test_every_cited_claim_traces_to_a_verbatim_quote_in_its_source_snapshot(
    tmp_path: Path, workflow: Workflow, corpus_name: str
) -> None:
    if corpus_name == "bundled":
        task = workflow.task(OBJECTIVE)
    else:
        corpus = write_corpus(tmp_path / "bees", SECOND_CORPUS)
        task = workflow.task("Explain the honey bee waggle dance", corpus=[str(corpus)])
    outcome = workflow.run(task, "t-trace")
    assert outcome.result_status == "completed"
    article = workflow.artifact("t-trace", "article").decode()
    bundle = workflow.state("t-trace")["research"]
    assert isinstance(bundle, ResearchBundle)
    cited = CITATION.findall(article)
    assert cited, "the article cites claims"
    for claim_id in cited:
        fact = bundle.fact(claim_id)
        assert fact is not None, f"{claim_id} is a fact in the bundle"
        source = bundle.source(fact.source_id)
        assert source is not None
        snapshot = workflow.context.store.get(source.snapshot)
        assert hashlib.sha256(snapshot).hexdigest() == source.sha256
        text = snapshot.decode()
        assert text[fact.span.start : fact.span.end] == fact.quote
        original = Path(source.uri.removeprefix("file://")).read_bytes()
        assert hashlib.sha256(original).hexdigest() == source.sha256


def test_identical_tasks_on_two_threads_produce_byte_identical_articles(
    workflow: Workflow,
) -> None:
    first = workflow.run(workflow.task(OBJECTIVE, task_id="same-task"), "t-one")
    second = workflow.run(workflow.task(OBJECTIVE, task_id="same-task"), "t-two")
    assert first.article and second.article
    assert first.article.sha256 == second.article.sha256
    assert first.article.artifact_id != second.article.artifact_id


def test_a_used_thread_id_is_refused_for_a_new_run(workflow: Workflow) -> None:
    workflow.run(OBJECTIVE, "t-taken")
    before = workflow.checkpoint_count("t-taken")
    with pytest.raises(ThreadExists, match="t-taken"):
        workflow.run(OBJECTIVE, "t-taken")
    assert workflow.checkpoint_count("t-taken") == before


@pytest.mark.parametrize("thread_id", ["../x", "a/b", "", "-lead", "x" * 65, "sp ace"])
def test_unsafe_thread_ids_are_refused(workflow: Workflow, thread_id: str) -> None:
    with pytest.raises(InvalidThreadId, match="invalid thread id"):
        workflow.run(OBJECTIVE, thread_id)


def test_status_history_and_artifacts_of_an_unknown_thread_raise_thread_not_found(
    workflow: Workflow,
) -> None:
    for call in (workflow.status, workflow.history, workflow.outcome):
        with pytest.raises(ThreadNotFound, match="t-missing"):
            call("t-missing")
    assert workflow.threads() == []


def test_status_outcome_and_pending_read_the_latest_checkpoint_once(
    workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However long the thread's history: no earlier checkpoint is read.

    LangGraph rebuilds a merging channel whose value a checkpoint lacks (``branches``, which
    status leaves out) by reading ancestors until one holds it; status must not make it.
    """
    waiting = workflow.run(workflow.task(OBJECTIVE, policies={"require_approval": True}), "t-one")
    assert waiting.human_request is not None
    assert workflow.checkpoint_count("t-one") > 3, "a history to walk, were it walked"
    reads: list[str] = []
    savers: set[type[BaseCheckpointSaver[str]]] = {type(workflow.saver), GlanceSaver}
    for saver in savers:

        def counted(
            self: BaseCheckpointSaver[str],
            config: RunnableConfig,
            _read: Callable[..., Any] = saver.get_tuple,
            _name: str = saver.__name__,
        ) -> Any:
            reads.append(_name)
            return _read(self, config)

        monkeypatch.setattr(saver, "get_tuple", counted)
    status = workflow.status("t-one")
    assert reads == ["GlanceSaver"] and status.current == waiting
    reads.clear()
    assert workflow.outcome("t-one") == waiting and reads == ["GlanceSaver"]
    reads.clear()
    assert workflow.pending("t-one") == waiting.human_request and reads == ["GlanceSaver"]


def test_named_artifacts_resolve_and_unknown_names_are_refused(workflow: Workflow) -> None:
    workflow.run(OBJECTIVE, "t-names")
    for name in ("article", "draft", "notes", "review"):
        assert workflow.artifact("t-names", name)
    with pytest.raises(UnknownArtifactName, match="expected one of"):
        workflow.artifact("t-names", "secrets")
    assert workflow.threads() == ["t-names"]


def test_an_artifact_of_a_kind_a_project_node_stores_is_named_by_its_kind(
    settings: Settings,
) -> None:
    wiring = ((summarize, "read_summary"), (read_summary, STOP))
    with Workflow(settings, wiring=wiring) as workflow:
        workflow.run(OBJECTIVE, "t-kinds")
        assert workflow.artifact("t-kinds", "summary") == OBJECTIVE.encode()
        with pytest.raises(UnknownArtifactName, match=r"expected one of .*summary"):
            workflow.artifact("t-kinds", "secrets")


@node("announce", reads=TallyInput, writes=TallyOutput, terminal=True)
def announce(state: TallyInput) -> TallyOutput:
    """Streams its progress as a LangGraph node does, then counts."""
    get_stream_writer()({"counting": state["task"].objective})
    return {"tally": WordTally(words=len(state["task"].objective.split()))}


def test_what_a_node_streams_reaches_the_progress_a_run_reports(settings: Settings) -> None:
    seen: list[tuple[str, str]] = []
    with Workflow(settings, wiring=((announce, STOP),)) as workflow:
        workflow.run(
            OBJECTIVE, "t-streams", on_progress=lambda *step: seen.append(step_summary(*step))
        )
    assert seen[0] == ("progress", json.dumps({"counting": OBJECTIVE}))
    assert seen[1][0] == "announce", "sent while the node ran, before its update"


def test_a_run_or_an_edit_from_an_earlier_checkpoint_is_refused_and_writes_nothing(
    workflow: Workflow,
) -> None:
    """LangGraph's time travel would fork the thread: its audit, reuse and artifacts are one
    history's, so a fork would mix two (a revision is how a thread changes course)."""
    workflow.run(OBJECTIVE, "t-fork")
    config = workflow.config("t-fork")
    head = workflow.graph.get_state(config).config
    history = list(workflow.graph.get_state_history(config))
    [before_writer] = [snap for snap in history if snap.next == ("writer",)]
    with pytest.raises(CheckpointNotLatest, match="would fork the thread's history"):
        workflow.graph.invoke(None, before_writer.config, context=workflow.context)
    with pytest.raises(CheckpointNotLatest, match="goes on only from its latest checkpoint"):
        workflow.graph.update_state(before_writer.config, None)
    assert workflow.graph.get_state(config).config == head, "the thread's history is as it was"
    assert len(list(workflow.graph.get_state_history(config))) == len(history)
    revised = workflow.revise("t-fork", {"max_words": 150, "reason": "a shorter piece"})
    assert revised.result_status == "completed", "a revision goes on from the latest one"


def test_outcome_is_recorded_in_state_not_only_returned(workflow: Workflow) -> None:
    returned = workflow.run(OBJECTIVE, "t-recorded")
    stored = workflow.state("t-recorded")["outcome"]
    assert isinstance(stored, RunOutcome)
    assert stored == returned


def test_a_nodes_artifacts_are_synced_before_its_ledger_row_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The filesystem store (memory://, or PostgreSQL with ``filesystem``) batches a node's
    history fsyncs; the batch ends before the finish row names them."""
    settings = sqlite_settings(tmp_path / "data").model_copy(
        update={"database_url": "memory://", "artifact_store": "filesystem", "model": "offline"}
    )
    with Workflow(settings) as workflow:
        _run_recording_syncs(workflow, monkeypatch)


def _run_recording_syncs(workflow: Workflow, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.storage.artifacts import FilesystemArtifactStore

    store, ledger = workflow.context.store, workflow.context.ledger
    assert isinstance(store, FilesystemArtifactStore)
    events: list[str] = []

    def recording(name: str, method: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            events.append(name)
            return result

        return wrapper

    monkeypatch.setattr(store, "put", recording("put", store.put))
    monkeypatch.setattr(store, "sync", recording("sync", store.sync))
    finish = ledger.finish

    def finishing(thread_id: str, seq: int, run: Any, result: str | None = None) -> None:
        finish(thread_id, seq, run, result)
        # a running row's progress (a tool call's receipt) names no artifact
        events.append("progress" if run.status == "running" else "finish")

    monkeypatch.setattr(ledger, "finish", finishing)
    assert workflow.run(OBJECTIVE, "t-batched").result_status == "completed"
    assert "progress" in events, "research's reads are receipted as they end"
    assert events.count("put") >= 4
    for position, event in enumerate(events):
        if event == "finish" and "put" in events[:position]:
            since_put = events[:position][::-1]
            assert since_put.index("sync") < since_put.index("put"), events


def test_on_sqlite_each_unsynced_commit_is_followed_by_a_synced_one_of_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Artifact rows, start rows and succeeded finish rows skip their fsync: the node's
    checkpoint, committed (fsynced) to the same write-ahead log before the next node
    starts, makes them durable, as SQLite recovers the log up to its last intact commit."""
    settings = sqlite_settings(tmp_path / "data").model_copy(
        update={"artifact_store": "filesystem", "model": "offline"}  # rows in the same file
    )
    with Workflow(settings) as workflow:
        _run_recording_commits(workflow, monkeypatch)


def _run_recording_commits(workflow: Workflow, monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from app.storage.artifacts import SqliteArtifactStore
    from app.storage.ledger import SqliteRunLedger

    store, ledger = workflow.context.store, workflow.context.ledger
    saver = workflow.backend.saver.inner
    assert isinstance(store, SqliteArtifactStore)
    assert isinstance(ledger, SqliteRunLedger) and isinstance(saver, SqliteSaver)
    [(_, _, saver_file)] = saver.conn.execute("PRAGMA database_list").fetchall()
    assert Path(saver_file) == store.database.resolve() == ledger.path.resolve()
    events: list[tuple[str, int]] = []

    def level(conn: Any) -> int:
        [(synchronous,)] = conn.execute("PRAGMA synchronous").fetchall()
        return int(synchronous)

    def recording(name: str, method: Any, conn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            events.append((name, level(conn())))
            return result

        return wrapper

    for name, owner, conn in (
        ("put", store, lambda: store._conn),
        ("start", ledger, lambda: ledger._conn),
        ("finish", ledger, lambda: ledger._conn),
        ("put_writes", saver, lambda: saver.conn),
        ("checkpoint", saver, lambda: saver.conn),
    ):
        method = "put" if name == "checkpoint" else name
        monkeypatch.setattr(owner, method, recording(name, getattr(owner, method), conn))
    assert workflow.run(OBJECTIVE, "t-ordered").result_status == "completed"

    unsynced = [position for position, (_, synchronous) in enumerate(events) if synchronous < 2]
    assert {events[position][0] for position in unsynced} == {"put", "start", "finish"}
    for position in unsynced:
        later = events[position + 1 :]
        synced = next(name for name, synchronous in later if synchronous == 2)
        assert synced in ("put_writes", "checkpoint"), events
    assert events[-1] in (("checkpoint", 2), ("put_writes", 2)), "it ends on a synced commit"
