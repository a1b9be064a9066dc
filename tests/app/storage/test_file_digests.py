"""Remembered digests: an unchanged file is not read again, and every change is still seen.

The memo's only risk is a change it cannot tell from no change. These tests change files
in the ways that could hide that (same size, the old modification time restored, right
after the file was hashed) and check the new bytes are read every time.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from app.corpus.reading import CorpusPolicy, sha256_of
from app.storage.artifacts import FilesystemArtifactStore, SqliteArtifactStore
from app.storage.file_digests import FileDigests

SETTLE_NS = 50_000_000
"""A short settle time, so a test can wait past it; the default is two seconds."""


def settled(path: Path) -> None:
    """Wait until the file's last change is older than SETTLE_NS (with margin)."""
    time.sleep(3 * SETTLE_NS / 1e9)
    assert time.time_ns() - os.stat(path).st_ctime_ns > SETTLE_NS


def rewrite_keeping_mtime(path: Path, content: bytes) -> None:
    """New bytes of the same size, with the old modification time put back."""
    before = os.stat(path)
    assert len(content) == before.st_size
    path.write_bytes(content)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns


def policy_for(root: Path, digests: FileDigests) -> CorpusPolicy:
    return CorpusPolicy(roots=(root.resolve(),), max_bytes=1 << 20, read_seconds=5, digests=digests)


def hashed_settled_source(tmp_path: Path, content: bytes) -> tuple[Path, CorpusPolicy]:
    """A source written, left to settle, then hashed once (so its digest is remembered)."""
    source = tmp_path / "a.md"
    source.write_bytes(content)
    settled(source)
    policy = policy_for(tmp_path, FileDigests(settle_ns=SETTLE_NS))
    assert policy.sha256(source) == sha256_of(content)
    return source, policy


class CountingReads:
    """Counts os.read calls (of one file's bytes, if given), to tell a remembered digest
    from a re-read file."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, of: Path | None = None) -> None:
        self.calls = 0
        real = os.read
        inode = os.stat(of).st_ino if of is not None else None

        def read(fd: int, size: int) -> bytes:
            if inode is None or os.fstat(fd).st_ino == inode:
                self.calls += 1
            return real(fd, size)

        monkeypatch.setattr(os, "read", read)


def test_a_settled_unchanged_source_is_hashed_without_reading_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, policy = hashed_settled_source(tmp_path, b"the same bytes")
    reads = CountingReads(monkeypatch)
    assert policy.sha256(source) == sha256_of(b"the same bytes")
    assert reads.calls == 0


def test_a_source_changed_just_now_is_read_again_on_every_check(tmp_path: Path) -> None:
    """Within the settle time two writes may share their times: nothing is remembered."""
    source = tmp_path / "a.md"
    digests = FileDigests()  # the real two seconds
    policy = policy_for(tmp_path, digests)
    for content in (b"version one", b"version two", b"version one"):
        source.write_bytes(content)
        assert policy.sha256(source) == sha256_of(content)
        assert digests.known(os.stat(source)) is None


def test_a_remembered_source_rewritten_with_its_old_mtime_is_read_again(
    tmp_path: Path,
) -> None:
    source, policy = hashed_settled_source(tmp_path, b"original text")
    rewrite_keeping_mtime(source, b"tampered text")
    assert policy.sha256(source) == sha256_of(b"tampered text")


def test_a_remembered_source_replaced_by_another_file_is_read_again(tmp_path: Path) -> None:
    source, other = tmp_path / "a.md", tmp_path / "b.md"
    source.write_bytes(b"first file")
    other.write_bytes(b"other file")
    settled(other)
    policy = policy_for(tmp_path, FileDigests(settle_ns=SETTLE_NS))
    assert policy.sha256(source) == sha256_of(b"first file")
    os.replace(other, source)
    assert policy.sha256(source) == sha256_of(b"other file")


def test_a_file_that_changed_while_it_was_read_is_not_remembered(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes(b"before")
    before = os.stat(path)
    path.write_bytes(b"after!!")
    digests = FileDigests(settle_ns=0)
    digests.remember(before, os.stat(path), sha256_of(b"before"), time.time_ns() + 10**12)
    assert digests.known(before) is None


def test_the_memo_starts_over_when_full(tmp_path: Path) -> None:
    digests = FileDigests(settle_ns=0, max_entries=2)
    infos = []
    for name in "abc":
        path = tmp_path / name
        path.write_bytes(name.encode())
        info = os.stat(path)
        digests.remember(info, info, name, time.time_ns() + 10**12)
        infos.append(info)
    assert digests.known(infos[2]) == "c"
    assert [digests.known(info) for info in infos[:2]] == [None, None]


@pytest.mark.parametrize("kind", ["filesystem", "sqlite"])
def test_a_remembered_blob_tampered_with_its_old_mtime_is_reported_tampered(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    digests = FileDigests(settle_ns=SETTLE_NS)
    store = (
        FilesystemArtifactStore(tmp_path / "store", digests)
        if kind == "filesystem"
        else SqliteArtifactStore(tmp_path / "store", tmp_path / "handoff.db", digests=digests)
    )
    ref = store.put("a-notes", "notes", b"the bytes as written", "text/markdown")
    blob = store.root / "blobs" / ref.sha256[:2] / ref.sha256
    settled(blob)
    assert store.verify(ref) == "fresh"  # hashed, and now remembered
    reads = CountingReads(monkeypatch, of=blob)
    assert store.verify(ref) == "fresh"
    assert reads.calls == 0
    monkeypatch.undo()
    os.chmod(blob, 0o644)
    rewrite_keeping_mtime(blob, b"the bytes as altered")
    assert store.verify(ref) == "tampered"
    if isinstance(store, SqliteArtifactStore):
        store.close()
