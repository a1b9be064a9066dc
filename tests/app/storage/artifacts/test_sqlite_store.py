"""What the SQLite store does beyond the shared contract: its fsyncs, and older stores.

The shared behaviour (revisions, integrity, URIs, concurrent puts) runs on it in
``test_filesystem_store.py``; here are the parts only it has: histories imported from the
filesystem layout that came before it, and batched puts that leave the log's fsync to
the next fsynced commit.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.storage.artifacts import FilesystemArtifactStore, SqliteArtifactStore
from app.storage.artifacts import sqlite as sqlite_store
from graphs.errors import IntegrityError
from tests.app.storage.artifacts.spy import recorded_calls

MD = "text/markdown"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteArtifactStore]:
    opened = SqliteArtifactStore(tmp_path / "artifacts", tmp_path / "handoff.db")
    try:
        yield opened
    finally:
        opened.close()


def _legacy_store(root: Path) -> FilesystemArtifactStore:
    """A store in the layout before histories moved into the database."""
    legacy = FilesystemArtifactStore(root)
    legacy.put("t1-draft", "draft", b"first draft", MD)
    legacy.put("t1-draft", "draft", b"second draft", MD)
    legacy.put("t1-notes", "notes", b"notes", MD)
    return legacy


def test_histories_of_an_older_store_are_imported_on_first_use_and_the_folder_renamed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "artifacts"
    legacy = _legacy_store(root)
    drafts = legacy.history("t1-draft")

    store = SqliteArtifactStore(root, tmp_path / "handoff.db")
    try:
        assert store.history("t1-draft") == drafts
        assert store.ids() == ["t1-draft", "t1-notes"]
        assert store.get(drafts[0]) == b"first draft"
        assert store.verify(drafts[0]) == "stale"
        assert store.put("t1-draft", "draft", b"third draft", MD).revision == 3
    finally:
        store.close()
    assert not (root / "refs").exists()
    assert (root / "refs.imported" / "t1-draft.json").is_file(), "kept, out of the way"

    again = SqliteArtifactStore(root, tmp_path / "handoff.db")
    try:
        assert [ref.revision for ref in again.history("t1-draft")] == [1, 2, 3]
    finally:
        again.close()


def test_an_import_cut_short_before_the_rename_runs_again_without_duplicates(
    tmp_path: Path,
) -> None:
    root = tmp_path / "artifacts"
    _legacy_store(root)
    first = SqliteArtifactStore(root, tmp_path / "handoff.db")
    first.setup()
    first.close()
    os.rename(root / "refs.imported", root / "refs")  # as if killed before the rename

    second = SqliteArtifactStore(root, tmp_path / "handoff.db")
    try:
        assert [ref.revision for ref in second.history("t1-draft")] == [1, 2]
    finally:
        second.close()
    with sqlite3.connect(tmp_path / "handoff.db") as conn:
        [(rows,)] = conn.execute("SELECT count(*) FROM handoff_artifact_revisions").fetchall()
    assert rows == 3


def test_a_history_that_disagrees_with_the_database_is_refused_and_nothing_imported(
    tmp_path: Path,
) -> None:
    root = tmp_path / "artifacts"
    database = tmp_path / "handoff.db"
    elsewhere = SqliteArtifactStore(tmp_path / "other", database)
    elsewhere.put("t1-draft", "draft", b"a different draft", MD)
    elsewhere.close()
    _legacy_store(root)

    store = SqliteArtifactStore(root, database)
    try:
        with pytest.raises(IntegrityError, match=r"'t1-draft'.*nothing was imported"):
            store.history("t1-notes")
    finally:
        store.close()
    assert (root / "refs" / "t1-draft.json").is_file(), "the older histories stay where they were"
    with sqlite3.connect(database) as conn:
        ids = conn.execute("SELECT DISTINCT artifact_id FROM handoff_artifact_revisions").fetchall()
    assert ids == [("t1-draft",)]


def _fsyncs(store: SqliteArtifactStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every file or folder this process fsyncs once a first put ("t1-notes") has
    made the table and the blob folders."""
    store.put("t1-notes", "notes", b"warm-up", MD)
    return recorded_calls(monkeypatch, os, "fsync", lambda fd: os.readlink(f"/proc/self/fd/{fd}"))


def test_a_batch_commits_its_puts_without_a_log_fsync_until_asked(
    store: SqliteArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _fsyncs(store, monkeypatch)
    with store.batch():
        refs = [store.put(f"t1-part-{n}", "notes", f"part {n}".encode(), MD) for n in range(5)]
        with store.batch():
            store.put("t1-notes", "notes", b"more notes", MD)
        assert synced, "the new blobs (and their folders) are fsynced before their rows"
        with sqlite3.connect(store.database) as conn:
            [(rows,)] = conn.execute("SELECT count(*) FROM handoff_artifact_revisions").fetchall()
        assert rows == 7, "every put is committed, visible to other connections"
    assert all(path.startswith(f"{store.root}/blobs") for path in synced), "no log fsync"
    assert [store.head(ref.artifact_id) for ref in refs] == refs
    store.sync()
    assert [path for path in synced if path.endswith("-wal")] == [f"{store.database}-wal"]
    store.sync()
    assert len([path for path in synced if path.endswith("-wal")]) == 1, "nothing pending"


def test_closing_the_store_fsyncs_what_a_batch_left_pending(
    store: SqliteArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _fsyncs(store, monkeypatch)
    with store.batch():
        store.put("t1-notes", "notes", b"changed", MD)
    store.close()
    assert [path for path in synced if path.endswith("-wal")] == [f"{store.database}-wal"]


def test_reading_an_unknown_artifact_creates_no_folder(store: SqliteArtifactStore) -> None:
    assert store.head("t1-draft") is None
    assert store.ids() == []
    assert not store.root.exists()


def test_a_history_read_before_another_connection_changed_it_is_read_again(
    store: SqliteArtifactStore, tmp_path: Path
) -> None:
    first = store.put("t1-draft", "draft", b"one", MD)
    assert store.head("t1-draft") == first  # parsed and kept
    other = SqliteArtifactStore(store.root, store.database)
    try:
        second = other.put("t1-draft", "draft", b"two", MD)
    finally:
        other.close()
    assert store.head("t1-draft") == second
    assert store.verify(first) == "stale"
    with sqlite3.connect(store.database) as conn:
        conn.execute("UPDATE handoff_artifact_revisions SET ref = '{not json' WHERE revision = 2")
    assert store.verify(second) == "tampered"
    with pytest.raises(IntegrityError, match="unreadable at revision 2"):
        store.history("t1-draft")


def test_a_cached_history_is_not_read_again_after_commits_to_other_tables(
    store: SqliteArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints and the audit commit to the same file between every two nodes."""
    first = store.put("t1-notes", "notes", b"one", MD)
    second = store.put("t1-notes", "notes", b"two", MD)  # its own insert keeps the cache
    with sqlite3.connect(store.database) as conn:
        conn.execute("CREATE TABLE other (x)")
        conn.execute("INSERT INTO other VALUES (1)")
    parsed: list[object] = []
    real = sqlite_store.parse_entry
    monkeypatch.setattr(
        sqlite_store, "parse_entry", lambda *args: parsed.append(args) or real(*args)
    )
    assert [store.verify(first), store.verify(second)] == ["stale", "fresh"]
    assert store.head("t1-notes") == second
    assert parsed == []
    with sqlite3.connect(store.database) as conn:
        conn.execute("DELETE FROM handoff_artifact_revisions WHERE revision = 2")
    assert store.head("t1-notes") == first
    assert store.verify(second) == "missing"
    assert len(parsed) == 1
