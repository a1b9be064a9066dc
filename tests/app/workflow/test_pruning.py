"""Retention on real threads, on SQLite and PostgreSQL: what a prune removes, and what stays.

Threads are run through the Workflow with the offline agents. Threads of one corpus share
their source snapshots' blobs, so every test that removes a thread also checks that a blob
another thread names is still there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.agents.selection import parsed_documents
from app.durations import InvalidDuration
from app.settings import Settings
from app.storage.thread_rows import (
    PostgresThreadRows,
    SqliteThreadRows,
    ThreadRows,
    thread_rows,
)
from app.workflow import Workflow
from app.workflow.pruning import owners
from contracts import TaskState
from graphs.errors import UsageError
from tests.app.workflow.test_guard import Holding
from tests.backends import sqlite_settings
from tests.conftest import OBJECTIVE


def ended(workflow: Workflow, *threads: str) -> None:
    for thread in threads:
        assert workflow.run(OBJECTIVE, thread).state == TaskState.COMPLETED


def blobs_of(workflow: Workflow, thread: str) -> set[str]:
    """The blobs the thread's artifacts name."""
    by_artifact = workflow.backend.store.blobs_by_artifact()
    owned = owners(by_artifact, workflow.threads()).get(thread, [])
    return {sha256 for artifact_id in owned for sha256 in by_artifact[artifact_id]}


def readable(workflow: Workflow, thread: str) -> None:
    """The thread's article and every source snapshot read back, each verified."""
    assert workflow.artifact(thread, "article").startswith(b"# ")
    sources = workflow.sources(thread)
    assert sources and all(workflow.source_text(thread, source.id) for source in sources)


def stored(workflow: Workflow, sha256: str) -> bool:
    """Whether the store still holds the blob's bytes (the folder's file, or the row)."""
    store: Any = workflow.backend.store
    with store._session() as session:
        return store._fetch_blob(session, sha256) is not None


def rows_of(rows: ThreadRows, thread: str) -> dict[str, int]:
    """The thread's rows in each table keyed by thread id, counted."""
    counted: dict[str, int] = {}
    for table in rows.tables:
        query = f'SELECT count(*) FROM "{table}" WHERE thread_id = '
        if isinstance(rows, SqliteThreadRows):
            [(count,)] = rows.conn.execute(query + "?", (thread,)).fetchall()
        else:
            assert isinstance(rows, PostgresThreadRows)
            with rows.pool.connection() as conn:
                count = conn.execute(query + "%s", (thread,)).fetchone()["count"]
        counted[table] = int(count)
    return counted


@pytest.fixture
def opened(settings: Settings) -> Iterator[tuple[Workflow, Holding]]:
    """A Workflow whose guard holds the threads a test names, as the queue holds its jobs."""
    guard = Holding()
    with Workflow(settings, guard=guard) as workflow:
        yield workflow, guard


def test_a_prune_removes_an_ended_thread_whole_and_leaves_waiting_queued_and_running_ones(
    opened: tuple[Workflow, Holding], settings: Settings
) -> None:
    workflow, guard = opened
    shorter = workflow.task(OBJECTIVE, constraints={"max_words": 200})  # an article of its own
    assert workflow.run(shorter, "old").state == TaskState.COMPLETED
    ended(workflow, "queued", "running")
    waiting = workflow.task(OBJECTIVE, policies={"require_approval": True})
    assert workflow.run(waiting, "waiting").state == TaskState.INPUT_REQUIRED
    named = blobs_of(workflow, "old")
    others = set().union(*(blobs_of(workflow, t) for t in ("queued", "running", "waiting")))
    assert named - others and named & others  # its own blobs, and snapshots others share
    with thread_rows(workflow.backend) as rows:
        before = rows_of(rows, "old")
    assert {"checkpoints", "handoff_node_runs"} <= {t for t, n in before.items() if n}

    guard.held.add("queued")
    with Workflow(settings) as other, other.backend.lock.hold("running"):  # another process
        report = workflow.prune("0s")

    assert [thread.thread_id for thread in report.pruned] == ["old"]
    assert dict(report.kept).keys() == {"queued", "running"}
    assert "busy" in dict(report.kept)["running"]
    assert workflow.threads() == ["queued", "running", "waiting"]
    assert not any(artifact_id.startswith("old-") for artifact_id in workflow.backend.store.ids())
    assert not any(stored(workflow, sha256) for sha256 in named - others)
    assert all(stored(workflow, sha256) for sha256 in others)
    assert workflow.ledger.runs("old") == []
    with thread_rows(workflow.backend) as rows:
        assert set(rows_of(rows, "old").values()) == {0}
    for thread in ("queued", "running"):
        readable(workflow, thread)
    request = workflow.pending("waiting")
    assert request is not None  # still waiting, and its decision still applies
    approve = {"interrupt_id": request.interrupt_id, "action": "approve"}
    assert workflow.resume("waiting", approve).state == TaskState.COMPLETED

    guard.held.clear()  # the job finished, the run too: now they go
    again = workflow.prune("0s")
    assert sorted(thread.thread_id for thread in again.pruned) == ["queued", "running", "waiting"]
    assert workflow.threads() == [] and workflow.backend.store.ids() == []
    assert not any(stored(workflow, sha256) for sha256 in named | others)


def test_a_dry_run_reports_each_threads_age_and_bytes_and_changes_nothing(
    opened: tuple[Workflow, Holding],
) -> None:
    workflow, _ = opened
    ended(workflow, "first", "second")
    store = workflow.backend.store

    def everything() -> tuple[object, ...]:
        with thread_rows(workflow.backend) as rows:
            counted = [rows_of(rows, thread) for thread in ("first", "second")]
        blobs = store.blobs_by_artifact()
        held = {sha for named in blobs.values() for sha in named if stored(workflow, sha)}
        return workflow.threads(), blobs, held, counted

    before = everything()
    now = datetime.now(UTC) + timedelta(days=2)
    dry = workflow.prune("1d", dry_run=True, now=now)
    assert everything() == before
    assert dry.dry_run and [thread.thread_id for thread in dry.pruned] == ["first", "second"]
    assert all(thread.bytes > 0 for thread in dry.pruned)
    assert all(timedelta(days=2) < thread.age < timedelta(days=2, hours=1) for thread in dry.pruned)
    assert dry.total_bytes == sum(thread.bytes for thread in dry.pruned)

    done = workflow.prune("1d", now=now)
    assert [(t.thread_id, t.bytes) for t in done.pruned] == [
        (t.thread_id, t.bytes) for t in dry.pruned
    ]
    assert workflow.threads() == []


def test_keep_last_keeps_the_most_recently_ended_threads_however_old(
    opened: tuple[Workflow, Holding],
) -> None:
    workflow, _ = opened
    ended(workflow, "t", "t-2", "t-2-3")  # ids that start one another's artifact ids
    report = workflow.prune("0s", keep_last=2)
    assert [thread.thread_id for thread in report.pruned] == ["t"]
    assert workflow.threads() == ["t-2", "t-2-3"]
    for thread in ("t-2", "t-2-3"):
        readable(workflow, thread)
    assert workflow.prune("0s", keep_last=2).pruned == ()


def test_only_threads_that_ended_longer_ago_than_the_duration_go(
    opened: tuple[Workflow, Holding],
) -> None:
    workflow, _ = opened
    ended(workflow, "earlier", "later")
    first, last = (
        datetime.fromisoformat(workflow.status(thread).updated_at or "")
        for thread in ("earlier", "later")
    )
    now = last + timedelta(days=30) - (last - first) / 2  # 30 days after a moment between
    report = workflow.prune("30d", now=now)
    assert [(thread.thread_id, thread.age) for thread in report.pruned] == [
        ("earlier", now - first)
    ]
    assert workflow.threads() == ["later"]


def test_research_kept_files_unread_for_the_age_go_and_what_a_run_read_since_stays(
    opened: tuple[Workflow, Holding],
) -> None:
    """Parsed documents and corpus indexes are research's cache, kept while runs read them."""
    workflow, _ = opened
    ended(workflow, "cached")
    files = [path for path, _ in parsed_documents(workflow.settings).unused_since(float("inf"))]
    assert files, "research kept what it parsed and indexed"
    long_ago = time.time() - 3 * 86400
    for path in files:
        os.utime(path, (long_ago, long_ago))

    dry = workflow.prune("2d", dry_run=True)
    assert (dry.unused_files, dry.unused_bytes) == (
        len(files),
        sum(path.stat().st_size for path in files),
    )
    assert all(path.exists() for path in files), "a dry run removes nothing"

    ended(workflow, "again")  # reads what research kept: marks it used
    read = {path for path in files if path.stat().st_mtime > long_ago + 60}
    assert read, "the second run read what research kept"
    report = workflow.prune("2d")
    assert report.unused_files == len(files) - len(read)
    assert all(path.exists() == (path in read) for path in files)
    assert workflow.threads() == ["again", "cached"], "threads that ended now stay"
    ended(workflow, "after")  # what went is parsed again


def test_a_bad_duration_or_count_is_refused_naming_it_and_nothing_is_pruned(
    tmp_path: Any,
) -> None:
    with Workflow(sqlite_settings(tmp_path / "data")) as workflow:
        ended(workflow, "kept")
        with pytest.raises(InvalidDuration, match="older_than: invalid duration '30 days'.*30d"):
            workflow.prune("30 days")
        with pytest.raises(UsageError, match="keep_last: expected 0 or more"):
            workflow.prune("0s", keep_last=-1)
        with pytest.raises(UsageError, match="now: expected a time with its time zone"):
            workflow.prune("0s", now=datetime(2030, 1, 1))
        assert workflow.threads() == ["kept"]
    with (
        Workflow(Settings(database_url="memory://", artifact_store="memory")) as workflow,
        pytest.raises(UsageError, match="nothing to prune"),
    ):
        workflow.prune("0s")


def test_an_artifact_belongs_to_the_longest_thread_id_that_starts_it() -> None:
    found = owners(["a-draft", "a-b-draft", "a-b-c-src-1", "a-x-notes", "zz-draft"], ["a", "a-b"])
    assert found == {"a": ["a-draft", "a-x-notes"], "a-b": ["a-b-draft", "a-b-c-src-1"]}
