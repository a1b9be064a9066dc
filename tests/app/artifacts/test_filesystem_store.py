"""FilesystemArtifactStore against real files: revisions, integrity, path safety, concurrency."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.artifacts import FilesystemArtifactStore, parse_artifact_uri
from contracts import ArtifactRef
from graphs.errors import ArtifactError, ArtifactNotFound, IntegrityError, InvalidArtifactId
from graphs.ports import ArtifactStore

MD = "text/markdown"


@pytest.fixture
def store(tmp_path: Path) -> FilesystemArtifactStore:
    return FilesystemArtifactStore(tmp_path / "store")


def _blob_path(store: FilesystemArtifactStore, ref: ArtifactRef) -> Path:
    return store.root / "blobs" / ref.sha256[:2] / ref.sha256


def _history_entries(store: FilesystemArtifactStore, artifact_id: str) -> list[object]:
    entries = json.loads((store.root / "refs" / f"{artifact_id}.json").read_text())
    assert isinstance(entries, list)
    return entries


def test_store_satisfies_the_artifact_store_protocol(store: FilesystemArtifactStore) -> None:
    port: ArtifactStore = store
    assert port.head("nothing") is None


def test_constructing_and_reading_an_unknown_artifact_creates_nothing(tmp_path: Path) -> None:
    store = FilesystemArtifactStore(tmp_path / "store")
    assert store.head("t1-draft") is None
    assert store.history("t1-draft") == []
    assert store.ids() == []
    assert not (tmp_path / "store").exists()


def test_first_put_is_revision_one_with_hash_size_and_uri(store: FilesystemArtifactStore) -> None:
    ref = store.put("t1-draft", "draft", b"hello", MD)
    assert ref.revision == 1
    assert ref.uri == "artifact://draft/t1-draft"
    assert ref.sha256 == hashlib.sha256(b"hello").hexdigest()
    assert ref.size_bytes == 5
    assert store.head("t1-draft") == ref
    assert store.ids() == ["t1-draft"]


def test_identical_reput_returns_same_revision_and_writes_no_history_entry(
    store: FilesystemArtifactStore,
) -> None:
    first = store.put("t1-draft", "draft", b"same", MD)
    again = store.put("t1-draft", "draft", b"same", MD)
    assert again == first
    assert len(_history_entries(store, "t1-draft")) == 1


def test_changed_content_is_revision_two_and_old_content_again_is_revision_three(
    store: FilesystemArtifactStore,
) -> None:
    r1 = store.put("t1-draft", "draft", b"one", MD)
    r2 = store.put("t1-draft", "draft", b"two", MD)
    r3 = store.put("t1-draft", "draft", b"one", MD)
    assert [r1.revision, r2.revision, r3.revision] == [1, 2, 3]
    assert r3.sha256 == r1.sha256
    assert store.history("t1-draft") == [r1, r2, r3]


def test_changed_media_type_is_a_new_revision(store: FilesystemArtifactStore) -> None:
    store.put("t1-draft", "draft", b"x", MD)
    assert store.put("t1-draft", "draft", b"x", "text/plain").revision == 2


def test_an_artifact_id_cannot_change_kind(store: FilesystemArtifactStore) -> None:
    store.put("t1-draft", "draft", b"x", MD)
    with pytest.raises(ArtifactError, match="'draft' artifact and cannot be stored as 'notes'"):
        store.put("t1-draft", "notes", b"y", MD)
    assert len(store.history("t1-draft")) == 1


def test_invalid_kind_or_media_type_is_refused_before_writing(
    store: FilesystemArtifactStore,
) -> None:
    with pytest.raises(ValueError):
        store.put("t1-draft", "bogus", b"x", MD)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.put("t1-draft", "draft", b"x", "not a media type")
    assert not store.root.exists()


def test_get_returns_exact_bytes_of_an_older_revision(store: FilesystemArtifactStore) -> None:
    r1 = store.put("t1-draft", "draft", b"first\x00\xff", MD)
    store.put("t1-draft", "draft", b"second", MD)
    assert store.get(r1) == b"first\x00\xff"


def test_get_accepts_a_ref_as_a_dict(store: FilesystemArtifactStore) -> None:
    ref = store.put("t1-draft", "draft", b"abc", MD)
    assert store.get(ref.model_dump(mode="json")) == b"abc"


def test_get_of_a_tampered_blob_raises_integrity_error(store: FilesystemArtifactStore) -> None:
    ref = store.put("t1-draft", "draft", b"original", MD)
    _blob_path(store, ref).write_bytes(b"evil")
    with pytest.raises(IntegrityError, match=r"artifact://draft/t1-draft revision 1") as info:
        store.get(ref)
    assert ref.sha256 in info.value.message
    assert hashlib.sha256(b"evil").hexdigest() in info.value.message


def test_get_of_a_deleted_blob_raises_artifact_not_found(store: FilesystemArtifactStore) -> None:
    ref = store.put("t1-draft", "draft", b"gone soon", MD)
    _blob_path(store, ref).unlink()
    with pytest.raises(ArtifactNotFound, match=r"artifact://draft/t1-draft revision 1: blob"):
        store.get(ref)


def test_get_of_a_revision_the_store_never_recorded_raises_not_found(
    store: FilesystemArtifactStore,
) -> None:
    ref = store.put("t1-draft", "draft", b"x", MD)
    with pytest.raises(ArtifactNotFound, match="'t1-draft' has no revision 5"):
        store.get(ref.model_copy(update={"revision": 5}))
    with pytest.raises(ArtifactNotFound, match="'other' .* is not in the store"):
        store.get(ref.model_copy(update={"artifact_id": "other", "uri": "artifact://draft/other"}))


def test_get_of_a_ref_with_a_forged_hash_raises_integrity_error(
    store: FilesystemArtifactStore,
) -> None:
    ref = store.put("t1-draft", "draft", b"x", MD)
    forged = ref.model_copy(update={"sha256": "0" * 64})
    with pytest.raises(IntegrityError, match="'t1-draft' revision 1"):
        store.get(forged)


def test_repair_of_a_damaged_blob_by_putting_the_same_content(
    store: FilesystemArtifactStore,
) -> None:
    ref = store.put("t1-draft", "draft", b"original", MD)
    _blob_path(store, ref).write_bytes(b"evil")
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
def test_traversal_and_malformed_ids_are_refused(
    store: FilesystemArtifactStore, bad_id: str
) -> None:
    with pytest.raises(InvalidArtifactId, match="letters, digits") as info:
        store.put(bad_id, "draft", b"x", MD)
    assert repr(bad_id) in info.value.message
    with pytest.raises(InvalidArtifactId):
        store.history(bad_id)
    with pytest.raises(InvalidArtifactId):
        store.head(bad_id)
    assert not store.root.exists()


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
        "artifact://bogus/t1",
        "artifact:///t1",
        "artifact://draft/.hidden",
        "artifact://draft/a..b",
        "artifact://draft/t1\n",
    ],
)
def test_bad_uris_are_refused(store: FilesystemArtifactStore, bad_uri: str) -> None:
    with pytest.raises(InvalidArtifactId, match="invalid artifact uri"):
        parse_artifact_uri(bad_uri)
    with pytest.raises(InvalidArtifactId):
        store.get_uri(bad_uri)


def test_get_uri_returns_head_or_the_requested_revision(store: FilesystemArtifactStore) -> None:
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


def test_verify_reports_fresh_stale_tampered_and_missing(store: FilesystemArtifactStore) -> None:
    r1 = store.put("t1-draft", "draft", b"one", MD)
    assert store.verify(r1) == "fresh"
    r2 = store.put("t1-draft", "draft", b"two", MD)
    assert store.verify(r1) == "stale"
    assert store.verify(r2) == "fresh"

    _blob_path(store, r2).write_bytes(b"evil")
    assert store.verify(r2) == "tampered"
    assert store.verify(r2.model_copy(update={"sha256": "0" * 64})) == "tampered"

    _blob_path(store, r1).unlink()
    assert store.verify(r1) == "missing"

    other = store.put("t1-notes", "notes", b"n", MD)
    (store.root / "refs" / "t1-notes.json").unlink()
    assert store.verify(other) == "missing"


def test_verify_reports_a_corrupt_history_as_tampered(store: FilesystemArtifactStore) -> None:
    ref = store.put("t1-draft", "draft", b"one", MD)
    (store.root / "refs" / "t1-draft.json").write_text("{not json")
    assert store.verify(ref) == "tampered"
    with pytest.raises(IntegrityError, match="t1-draft"):
        store.history("t1-draft")


def _put_from_process(root: str, artifact_id: str, content: bytes) -> int:
    return FilesystemArtifactStore(Path(root)).put(artifact_id, "notes", content, MD).revision


def test_concurrent_puts_from_four_processes_yield_revisions_one_to_n(tmp_path: Path) -> None:
    root = tmp_path / "store"
    contents = [f"process-content-{n}".encode() for n in range(16)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        revisions = pool.starmap(
            _put_from_process, [(str(root), "shared", content) for content in contents]
        )
    assert sorted(revisions) == list(range(1, len(contents) + 1))

    store = FilesystemArtifactStore(root)
    history = store.history("shared")
    assert [ref.revision for ref in history] == list(range(1, len(contents) + 1))
    by_revision = dict(zip(revisions, contents, strict=True))
    for ref in history:
        assert store.get(ref) == by_revision[ref.revision]


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=st.binary(max_size=4096))
def test_any_bytes_round_trip_and_match_their_sha256(tmp_path: Path, content: bytes) -> None:
    store = FilesystemArtifactStore(tmp_path / "prop")
    ref = store.put("prop", "source", content, "application/octet-stream")
    got = store.get(ref)
    assert got == content
    assert ref.sha256 == hashlib.sha256(got).hexdigest()
    assert ref.size_bytes == len(content)
