"""The artifact stores against real files and a real PostgreSQL schema.

Every behaviour of the ArtifactStore contract (revisions, integrity, verification, URIs,
concurrent puts from several processes) runs on FilesystemArtifactStore,
SqliteArtifactStore (blobs in a folder, histories in an SQLite file),
PostgresArtifactStore and MemoryArtifactStore (one process: its concurrent puts come from
threads) through a ``harness`` that knows how to damage each one. Path and symlink safety
is the filesystem store's alone and runs on it only.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.storage.artifacts import (
    FilesystemArtifactStore,
    MemoryArtifactStore,
    PostgresArtifactStore,
    SqliteArtifactStore,
    parse_artifact_uri,
)
from contracts import ArtifactRef
from graphs.errors import ArtifactError, ArtifactNotFound, IntegrityError, InvalidArtifactId
from graphs.ports import ArtifactStore
from tests.app.storage.artifacts.spy import recorded_calls
from tests.backends import postgres_schema

MD = "text/markdown"
AnyStore = (
    FilesystemArtifactStore | SqliteArtifactStore | PostgresArtifactStore | MemoryArtifactStore
)


@pytest.fixture
def store(tmp_path: Path) -> FilesystemArtifactStore:
    return FilesystemArtifactStore(tmp_path / "store")


def _blob_path(store: FilesystemArtifactStore | SqliteArtifactStore, ref: ArtifactRef) -> Path:
    return store.root / "blobs" / ref.sha256[:2] / ref.sha256


def _history_entries(store: FilesystemArtifactStore, artifact_id: str) -> list[object]:
    entries = json.loads((store.root / "refs" / f"{artifact_id}.json").read_text())
    assert isinstance(entries, list)
    return entries


@dataclass
class Harness:
    """A store plus the means to damage it behind its back, per backend."""

    kind: str
    store: Any
    url: str | None = None

    @property
    def blobs_in_files(self) -> bool:
        return self.kind in ("filesystem", "sqlite")

    def _sqlite(self, statement: str, args: tuple[object, ...]) -> list[Any]:
        with sqlite3.connect(self.store.database) as conn:
            return conn.execute(statement, args).fetchall()

    def _sql(self, *statements: tuple[str, tuple[object, ...]]) -> list[Any]:
        import psycopg

        assert self.url is not None
        with psycopg.connect(self.url, autocommit=True) as conn:
            cursors = [conn.execute(sql, args) for sql, args in statements]
            return [cursor.fetchall() if cursor.description else [] for cursor in cursors]

    def location(self) -> str:
        if self.kind == "sqlite":
            return f"{self.store.root}|{self.store.database}"
        return str(self.store.root) if self.kind == "filesystem" else str(self.url)

    def tamper(self, ref: ArtifactRef, content: bytes) -> None:
        if self.kind == "memory":
            self.store.blobs[ref.sha256] = content
        elif self.blobs_in_files:
            _blob_path(self.store, ref).write_bytes(content)
        else:
            self._sql(
                (
                    "UPDATE handoff_artifact_blobs SET content = %s WHERE sha256 = %s RETURNING 1",
                    (content, ref.sha256),
                )
            )

    def drop_blob(self, ref: ArtifactRef) -> None:
        if self.kind == "memory":
            del self.store.blobs[ref.sha256]
        elif self.blobs_in_files:
            _blob_path(self.store, ref).unlink()
        else:  # past the foreign key, as a damaged database would be
            self._sql(
                ("SET session_replication_role = replica", ()),
                ("DELETE FROM handoff_artifact_blobs WHERE sha256 = %s RETURNING 1", (ref.sha256,)),
            )

    def forget(self, artifact_id: str) -> None:
        if self.kind == "memory":
            del self.store.histories[artifact_id]
        elif self.kind == "filesystem":
            (self.store.root / "refs" / f"{artifact_id}.json").unlink()
        elif self.kind == "sqlite":
            self._sqlite(
                "DELETE FROM handoff_artifact_revisions WHERE artifact_id = ?", (artifact_id,)
            )
        else:
            self._sql(
                (
                    "DELETE FROM handoff_artifact_revisions WHERE artifact_id = %s RETURNING 1",
                    (artifact_id,),
                ),
                (
                    "DELETE FROM handoff_artifacts WHERE artifact_id = %s RETURNING 1",
                    (artifact_id,),
                ),
            )

    def corrupt_history(self, artifact_id: str) -> None:
        if self.kind == "memory":
            self.store.histories[artifact_id] = ["{not json"]
        elif self.kind == "filesystem":
            (self.store.root / "refs" / f"{artifact_id}.json").write_text("{not json")
        elif self.kind == "sqlite":
            self._sqlite(
                "UPDATE handoff_artifact_revisions SET ref = '{not json' WHERE artifact_id = ?",
                (artifact_id,),
            )
        else:
            self._sql(
                (
                    "UPDATE handoff_artifact_revisions SET ref = '{not json' "
                    "WHERE artifact_id = %s RETURNING 1",
                    (artifact_id,),
                )
            )

    def entries(self, artifact_id: str) -> int:
        """Revisions as stored (not through the store's API)."""
        if self.kind == "memory":
            return len(self.store.histories[artifact_id])
        if self.kind == "filesystem":
            return len(_history_entries(self.store, artifact_id))
        if self.kind == "sqlite":
            [(count,)] = self._sqlite(
                "SELECT count(*) FROM handoff_artifact_revisions WHERE artifact_id = ?",
                (artifact_id,),
            )
            return int(count)
        [[(count,)]] = self._sql(
            (
                "SELECT count(*) FROM handoff_artifact_revisions WHERE artifact_id = %s",
                (artifact_id,),
            )
        )
        return int(count)

    def untouched(self) -> bool:
        """Nothing was written: no folder, or no row in any artifact table."""
        if self.kind == "memory":
            return not self.store.blobs and not self.store.histories
        if self.kind == "filesystem":
            return not self.store.root.exists()
        if self.kind == "sqlite":
            if self.store.root.exists():
                return False
            return not self.store.database.exists() or not self._sqlite(
                "SELECT 1 FROM handoff_artifact_revisions LIMIT 1", ()
            )
        [[(rows,)]] = self._sql(
            (
                "SELECT (SELECT count(*) FROM handoff_artifact_blobs) "
                "+ (SELECT count(*) FROM handoff_artifacts) "
                "+ (SELECT count(*) FROM handoff_artifact_revisions)",
                (),
            )
        )
        return int(rows) == 0


def open_store(kind: str, location: str) -> AnyStore:
    if kind == "filesystem":
        return FilesystemArtifactStore(Path(location))
    if kind == "sqlite":
        root, database = location.split("|")
        return SqliteArtifactStore(Path(root), Path(database))
    return PostgresArtifactStore(location, timeout=10)


@pytest.fixture(
    params=[
        "filesystem",
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        "memory",
    ]
)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    if request.param == "memory":
        yield Harness("memory", MemoryArtifactStore())
        return
    if request.param == "filesystem":
        yield Harness("filesystem", FilesystemArtifactStore(tmp_path / "store"))
        return
    if request.param == "sqlite":
        store = SqliteArtifactStore(tmp_path / "store", tmp_path / "handoff.db")
        try:
            yield Harness("sqlite", store)
        finally:
            store.close()
        return
    with postgres_schema() as url:
        store = PostgresArtifactStore(url, timeout=10)
        store.setup()
        try:
            yield Harness("postgres", store, url)
        finally:
            store.close()


def test_store_satisfies_the_artifact_store_protocol(harness: Harness) -> None:
    store = harness.store
    port: ArtifactStore = store
    assert port.head("nothing") is None


def test_constructing_and_reading_an_unknown_artifact_creates_nothing(harness: Harness) -> None:
    store = harness.store
    assert store.head("t1-draft") is None
    assert store.history("t1-draft") == []
    assert store.ids() == []
    assert harness.untouched()


def test_first_put_is_revision_one_with_hash_size_and_uri(harness: Harness) -> None:
    store = harness.store
    ref = store.put("t1-draft", "draft", b"hello", MD)
    assert ref.revision == 1
    assert ref.uri == "artifact://draft/t1-draft"
    assert ref.sha256 == hashlib.sha256(b"hello").hexdigest()
    assert ref.size_bytes == 5
    assert store.head("t1-draft") == ref
    assert store.ids() == ["t1-draft"]


def drafts(store: AnyStore, *contents: bytes) -> list[ArtifactRef]:
    """The refs of ``t1-draft`` put with each of ``contents`` in turn."""
    return [store.put("t1-draft", "draft", content, MD) for content in contents]


def test_identical_reput_returns_same_revision_and_writes_no_history_entry(
    harness: Harness,
) -> None:
    first, again = drafts(harness.store, b"same", b"same")
    assert again == first
    assert harness.entries("t1-draft") == 1


def test_changed_content_is_revision_two_and_old_content_again_is_revision_three(
    harness: Harness,
) -> None:
    r1, r2, r3 = drafts(harness.store, b"one", b"two", b"one")
    assert [r1.revision, r2.revision, r3.revision] == [1, 2, 3]
    assert r3.sha256 == r1.sha256
    assert harness.store.history("t1-draft") == [r1, r2, r3]


def test_changed_media_type_is_a_new_revision(harness: Harness) -> None:
    store = harness.store
    store.put("t1-draft", "draft", b"x", MD)
    assert store.put("t1-draft", "draft", b"x", "text/plain").revision == 2


def test_an_artifact_id_cannot_change_kind(harness: Harness) -> None:
    store = harness.store
    store.put("t1-draft", "draft", b"x", MD)
    with pytest.raises(ArtifactError, match="'draft' artifact and cannot be stored as 'notes'"):
        store.put("t1-draft", "notes", b"y", MD)
    assert len(store.history("t1-draft")) == 1


def test_invalid_kind_or_media_type_is_refused_before_writing(
    harness: Harness,
) -> None:
    store = harness.store
    with pytest.raises(ValueError):
        store.put("t1-draft", "Not a kind", b"x", MD)
    with pytest.raises(ValueError):
        store.put("t1-draft", "draft", b"x", "not a media type")
    assert harness.untouched()


def test_get_returns_exact_bytes_of_an_older_revision(harness: Harness) -> None:
    store = harness.store
    r1 = store.put("t1-draft", "draft", b"first\x00\xff", MD)
    store.put("t1-draft", "draft", b"second", MD)
    assert store.get(r1) == b"first\x00\xff"


def test_get_accepts_a_ref_as_a_dict(harness: Harness) -> None:
    store = harness.store
    ref = store.put("t1-draft", "draft", b"abc", MD)
    assert store.get(ref.model_dump(mode="json")) == b"abc"


def test_get_of_a_tampered_blob_raises_integrity_error(harness: Harness) -> None:
    store = harness.store
    ref = store.put("t1-draft", "draft", b"original", MD)
    harness.tamper(ref, b"evil")
    with pytest.raises(IntegrityError, match=r"artifact://draft/t1-draft revision 1") as info:
        store.get(ref)
    assert ref.sha256 in info.value.message
    assert hashlib.sha256(b"evil").hexdigest() in info.value.message


def _blob_deleted(harness: Harness, ref: ArtifactRef) -> ArtifactRef:
    harness.drop_blob(ref)
    return ref


def _revision_never_recorded(harness: Harness, ref: ArtifactRef) -> ArtifactRef:
    return ref.model_copy(update={"revision": 5})


def _artifact_never_recorded(harness: Harness, ref: ArtifactRef) -> ArtifactRef:
    return ref.model_copy(update={"artifact_id": "other", "uri": "artifact://draft/other"})


def _hash_forged(harness: Harness, ref: ArtifactRef) -> ArtifactRef:
    return ref.model_copy(update={"sha256": "0" * 64})


@pytest.mark.parametrize(
    ("spoil", "error", "match"),
    [
        pytest.param(
            _blob_deleted,
            ArtifactNotFound,
            r"artifact://draft/t1-draft revision 1: blob",
            id="deleted-blob-not-found",
        ),
        pytest.param(
            _revision_never_recorded,
            ArtifactNotFound,
            "'t1-draft' has no revision 5",
            id="revision-never-recorded-not-found",
        ),
        pytest.param(
            _artifact_never_recorded,
            ArtifactNotFound,
            "'other' .* is not in the store",
            id="artifact-never-recorded-not-found",
        ),
        pytest.param(
            _hash_forged,
            IntegrityError,
            "'t1-draft' revision 1",
            id="forged-hash-integrity-error",
        ),
    ],
)
def test_get_of_a_ref_the_store_cannot_serve_raises_naming_the_ref(
    harness: Harness,
    spoil: Callable[[Harness, ArtifactRef], ArtifactRef],
    error: type[ArtifactError],
    match: str,
) -> None:
    ref = harness.store.put("t1-draft", "draft", b"x", MD)
    with pytest.raises(error, match=match):
        harness.store.get(spoil(harness, ref))


def test_repair_of_a_damaged_blob_by_putting_the_same_content(
    harness: Harness,
) -> None:
    store = harness.store
    ref = store.put("t1-draft", "draft", b"original", MD)
    harness.tamper(ref, b"evil")
    assert store.put("t1-draft", "draft", b"original", MD) == ref
    assert store.get(ref) == b"original"


@pytest.mark.parametrize(
    "bad_id",
    [
        "..",
        "../x",
        "a/b",
        "/abs",
        "/etc/passwd",
        ".hidden",
        "a..b",
        "",
        "a\x00b",
        "a\\b",
        "x" * 129,
    ],
)
def test_traversal_and_malformed_ids_are_refused(harness: Harness, bad_id: str) -> None:
    store = harness.store
    with pytest.raises(InvalidArtifactId, match="letters, digits") as info:
        store.put(bad_id, "draft", b"x", MD)
    assert repr(bad_id) in info.value.message
    with pytest.raises(InvalidArtifactId):
        store.history(bad_id)
    with pytest.raises(InvalidArtifactId):
        store.head(bad_id)
    assert harness.untouched()


def test_a_symlinked_refs_dir_pointing_outside_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "store"
    root.mkdir()
    (root / "refs").symlink_to(outside, target_is_directory=True)
    store = FilesystemArtifactStore(root)
    with pytest.raises(InvalidArtifactId, match="symlink"):
        store.put("t1-draft", "draft", b"x", MD)
    with pytest.raises(InvalidArtifactId, match="symlink"):
        store.history("t1-draft")
    with pytest.raises(InvalidArtifactId, match="symlink"):
        store.ids()
    assert list(outside.iterdir()) == []


def test_a_symlinked_blob_cannot_redirect_a_read(
    store: FilesystemArtifactStore, tmp_path: Path
) -> None:
    ref = store.put("t1-draft", "draft", b"x", MD)
    secret = tmp_path / "secret"
    secret.write_bytes(b"x")
    blob = _blob_path(store, ref)
    blob.unlink()
    blob.symlink_to(secret)
    with pytest.raises(InvalidArtifactId, match="symlink"):
        store.get(ref)


def test_a_symlinked_history_file_cannot_redirect_a_write(
    store: FilesystemArtifactStore, tmp_path: Path
) -> None:
    store.put("t1-draft", "draft", b"x", MD)
    target = tmp_path / "target.json"
    target.write_text("[]")
    history = store.root / "refs" / "t1-draft.json"
    history.unlink()
    history.symlink_to(target)
    with pytest.raises(InvalidArtifactId, match="symlink"):
        store.put("t1-draft", "draft", b"y", MD)
    assert target.read_text() == "[]"


def _count_dir_fsyncs(store: FilesystemArtifactStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every folder the store fsyncs after a first put has made (and synced) them."""
    from app.storage.artifacts import files

    store.put("t1-warm", "draft", b"warm", MD)
    return recorded_calls(monkeypatch, files, "fsync", lambda directory: Path(directory).name)


def test_a_put_outside_a_batch_syncs_its_history_directory_before_returning(
    store: FilesystemArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _count_dir_fsyncs(store, monkeypatch)
    store.put("t1-draft", "draft", b"one", MD)
    store.put("t1-notes", "notes", b"two", MD)
    assert synced.count("refs") == 2


def test_a_batch_syncs_the_history_directory_once_at_its_end(
    store: FilesystemArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _count_dir_fsyncs(store, monkeypatch)
    with store.batch():
        for number in range(5):
            store.put(f"t1-src-{number}", "source", f"source {number}".encode(), MD)
        with store.batch():
            store.put("t1-notes", "notes", b"notes", MD)
        assert synced.count("refs") == 0
        # Blobs are still synced before the history that names them is written.
        assert len([name for name in synced if name not in ("refs", "blobs")]) == 6
    assert synced.count("refs") == 1
    assert [ref.artifact_id for ref in map(store.head, store.ids()) if ref] == store.ids()


def test_a_failed_batch_leaves_its_sync_pending_for_the_next(
    store: FilesystemArtifactStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _count_dir_fsyncs(store, monkeypatch)
    with pytest.raises(RuntimeError), store.batch():
        store.put("t1-draft", "draft", b"one", MD)
        raise RuntimeError("the node failed after its put")
    assert synced.count("refs") == 0
    with store.batch():
        assert store.put("t1-draft", "draft", b"one", MD).revision == 1  # unchanged head
    assert synced.count("refs") == 1


def test_parse_artifact_uri_splits_kind_and_id() -> None:
    assert parse_artifact_uri("artifact://draft/t1-draft.v2") == ("draft", "t1-draft.v2")


@pytest.mark.parametrize(
    "bad_uri",
    [
        "",
        "draft/t1",
        "file:///etc/passwd",
        "artifact://draft/",
        "artifact://draft/../x",
        "artifact://draft/a/b",
        "artifact://Draft/t1",
        "artifact://dr4ft/t1",
        "artifact:///t1",
        "artifact://draft/.hidden",
        "artifact://draft/a..b",
        "artifact://draft/t1\n",
    ],
)
def test_bad_uris_are_refused(harness: Harness, bad_uri: str) -> None:
    store = harness.store
    with pytest.raises(InvalidArtifactId, match="invalid artifact uri"):
        parse_artifact_uri(bad_uri)
    with pytest.raises(InvalidArtifactId):
        store.get_uri(bad_uri)


def test_get_uri_returns_head_or_the_requested_revision(harness: Harness) -> None:
    store = harness.store
    r1 = store.put("t1-draft", "draft", b"one", MD)
    r2 = store.put("t1-draft", "draft", b"two", MD)
    assert store.get_uri("artifact://draft/t1-draft") == (r2, b"two")
    assert store.get_uri("artifact://draft/t1-draft", revision=1) == (r1, b"one")
    with pytest.raises(ArtifactNotFound, match="no revision 3"):
        store.get_uri("artifact://draft/t1-draft", revision=3)
    with pytest.raises(ArtifactNotFound):
        store.get_uri("artifact://notes/t1-draft")
    with pytest.raises(ArtifactNotFound):
        store.get_uri("artifact://draft/unknown")


def test_verify_reports_fresh_stale_tampered_and_missing(harness: Harness) -> None:
    store = harness.store
    r1 = store.put("t1-draft", "draft", b"one", MD)
    assert store.verify(r1) == "fresh"
    r2 = store.put("t1-draft", "draft", b"two", MD)
    assert store.verify(r1) == "stale"
    assert store.verify(r2) == "fresh"

    harness.tamper(r2, b"evil")
    assert store.verify(r2) == "tampered"
    assert store.verify(r2.model_copy(update={"sha256": "0" * 64})) == "tampered"

    harness.drop_blob(r1)
    assert store.verify(r1) == "missing"

    other = store.put("t1-notes", "notes", b"n", MD)
    harness.forget("t1-notes")
    assert store.verify(other) == "missing"


def test_verify_reports_a_corrupt_history_as_tampered(harness: Harness) -> None:
    store = harness.store
    ref = store.put("t1-draft", "draft", b"one", MD)
    harness.corrupt_history("t1-draft")
    assert store.verify(ref) == "tampered"
    with pytest.raises(IntegrityError, match="t1-draft"):
        store.history("t1-draft")


def _put_from_process(kind: str, location: str, artifact_id: str, content: bytes) -> int:
    store = open_store(kind, location)
    try:
        return store.put(artifact_id, "notes", content, MD).revision
    finally:
        store.close()


@pytest.mark.slow
def test_concurrent_puts_from_four_processes_yield_revisions_one_to_n(harness: Harness) -> None:
    contents = [f"process-content-{n}".encode() for n in range(16)]
    if harness.kind == "memory":  # a memory store is one process's: its writers are threads
        with ThreadPoolExecutor(4) as threads:
            revisions = list(
                threads.map(
                    lambda content: harness.store.put("shared", "notes", content, MD).revision,
                    contents,
                )
            )
    else:
        context = multiprocessing.get_context("spawn")
        with context.Pool(4) as pool:
            revisions = pool.starmap(
                _put_from_process,
                [(harness.kind, harness.location(), "shared", content) for content in contents],
            )
    assert sorted(revisions) == list(range(1, len(contents) + 1))

    store = harness.store
    history = store.history("shared")
    assert [ref.revision for ref in history] == list(range(1, len(contents) + 1))
    by_revision = dict(zip(revisions, contents, strict=True))
    for ref in history:
        assert store.get(ref) == by_revision[ref.revision]


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=st.binary(max_size=4096))
def test_any_bytes_round_trip_and_match_their_sha256(harness: Harness, content: bytes) -> None:
    store = harness.store
    ref = store.put("prop", "source", content, "application/octet-stream")
    got = store.get(ref)
    assert got == content
    assert ref.sha256 == hashlib.sha256(got).hexdigest()
    assert ref.size_bytes == len(content)


def test_a_sweep_deletes_only_the_blobs_no_remaining_revision_names(harness: Harness) -> None:
    store = harness.store
    shared, own = drafts(store, b"shared", b"own")
    other = store.put("t2-draft", "draft", b"shared", MD)
    store.forget(["t1-draft"])
    assert store.sweep({shared.sha256, own.sha256}) == {own.sha256}
    assert store.ids() == ["t2-draft"]
    assert store.history("t1-draft") == []
    assert store.get(other) == b"shared"
    assert store.blobs_by_artifact() == {"t2-draft": {shared.sha256: len(b"shared")}}
    store.forget(["t2-draft"])
    assert store.sweep({shared.sha256}) == {shared.sha256}
    if harness.blobs_in_files:
        assert not _blob_path(store, shared).exists()
    else:
        assert harness.untouched()
    assert store.sweep({shared.sha256}) == set()


def test_a_sweep_racing_a_put_of_the_same_bytes_never_leaves_the_put_without_its_blob(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep comes between the put finding its blob stored and recording its revision."""
    if harness.kind == "memory":
        pytest.skip("a memory put holds one lock from blob to history: nothing comes between")
    store = harness.store
    [old] = drafts(store, b"bytes both name")
    store.forget(["t1-draft"])  # the blob is named by nothing now, as after a prune
    written = store._write_blob
    sweeping = ThreadPoolExecutor(1)
    swept: list[Future[set[str]]] = []

    def write_then_sweep(*args: Any) -> None:
        written(*args)
        if not swept:  # the sweep starts once the put found (or wrote) its blob
            swept.append(sweeping.submit(store.sweep, {old.sha256}))
            wait(swept, timeout=0.5)  # done (SQLite), or waiting for the put to finish

    monkeypatch.setattr(store, "_write_blob", write_then_sweep)
    ref = store.put("t2-draft", "draft", b"bytes both name", MD)
    deleted = swept[0].result(timeout=30)  # a sweep that failed raises here
    sweeping.shutdown()
    assert store.get(ref) == b"bytes both name"
    assert store.verify(ref) == "fresh"
    assert deleted == ({old.sha256} if harness.kind == "sqlite" else set())
