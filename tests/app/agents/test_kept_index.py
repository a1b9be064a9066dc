"""The index kept by the corpus's fingerprint: loaded when the corpus is the same, never trusted
blindly, and it changes nothing research finds."""

from __future__ import annotations

import io
import logging
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from app.agents import OfflineResearchAgent
from app.agents.kept_index import INDEX_FOLDER
from app.agents.parsed_documents import ParsedDocuments, read_kept, write_kept
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.artifacts import FilesystemArtifactStore
from app.storage.encryption import MAGIC, new_key, parse_keys
from contracts import ResearchBundle, TaskSpec
from graphs import ResearchRequest, StepInfo
from tests.conftest import OBJECTIVE

FIXED = datetime(2026, 1, 1, tzinfo=UTC)
WARNING = "does not check out"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The bundled corpus, copied so a test may change its files."""
    return Path(shutil.copytree(BUNDLED_CORPUS, tmp_path / "corpus"))


def _research(
    corpus: Path, store_dir: Path, kept: ParsedDocuments | None, *, widen: bool = False
) -> ResearchBundle:
    policy = Settings(corpus_roots=[corpus]).corpus_policy()
    agent = OfflineResearchAgent(
        default_corpus=[corpus], clock=lambda: FIXED, policy=policy, parsed_documents=kept
    )
    step = StepInfo(thread_id="t", node="research", step=1, task_version=1, widen=widen)
    task = TaskSpec(task_id="t", objective=OBJECTIVE)
    return agent.run(ResearchRequest(task, FilesystemArtifactStore(store_dir), step)).result


def _indexes(kept: ParsedDocuments) -> list[Path]:
    return sorted((kept.folder / INDEX_FOLDER).glob("*.npz"))


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "app.agents.kept_index" and record.levelno == logging.WARNING
    ]


def _documents(kept: ParsedDocuments) -> list[Path]:
    return sorted(kept.folder.rglob("*.json"))


def written(path: Path) -> tuple[int, bytes]:
    """What a write changes: a kept file is written whole to a new file moved in place."""
    return path.stat().st_ino, path.read_bytes()


@pytest.mark.parametrize("widen", [False, True], ids=["first pass", "widened"])
def test_a_later_run_loads_the_kept_index_and_finds_what_a_run_without_keeping_finds(
    corpus: Path, tmp_path: Path, widen: bool
) -> None:
    kept = ParsedDocuments(tmp_path / "parsed")
    plain = _research(corpus, tmp_path / "off", None, widen=widen)
    first = _research(corpus, tmp_path / "first", kept, widen=widen)
    [index] = _indexes(kept)
    stamp = written(index)
    for entry in _documents(kept):
        entry.unlink()  # a later run that built the index again would parse and keep these
    later = _research(corpus, tmp_path / "later", kept, widen=widen)
    assert _documents(kept) == []  # nothing was parsed: the index was loaded
    assert written(index) == stamp  # and not written again (a read marks it used only)
    assert plain.facts
    assert plain.model_dump() == first.model_dump() == later.model_dump()


def test_widened_and_first_pass_research_keep_an_index_each(corpus: Path, tmp_path: Path) -> None:
    kept = ParsedDocuments(tmp_path / "parsed")
    _research(corpus, tmp_path / "one", kept)
    _research(corpus, tmp_path / "two", kept, widen=True)
    assert len(_indexes(kept)) == 2


def test_a_changed_source_builds_the_index_again_in_place_of_the_old_one(
    corpus: Path, tmp_path: Path
) -> None:
    kept = ParsedDocuments(tmp_path / "parsed")
    _research(corpus, tmp_path / "one", kept)
    [index] = _indexes(kept)
    before = index.read_bytes()
    changed = corpus / "the-rosetta-stone.md"
    changed.write_text(changed.read_text(encoding="utf-8") + "\nThe stone was moved.\n")
    again = _research(corpus, tmp_path / "two", kept)
    fresh = _research(corpus, tmp_path / "three", None)
    assert again.model_dump() == fresh.model_dump()
    assert _indexes(kept) == [index]  # one index per corpus: replaced, not added to
    assert index.read_bytes() != before
    source = next(source for source in again.sources if source.uri.endswith(changed.name))
    store = FilesystemArtifactStore(tmp_path / "two")
    assert store.get(source.snapshot) == changed.read_bytes()  # the bytes read now


def test_an_index_built_by_another_reader_is_built_again(corpus: Path, tmp_path: Path) -> None:
    kept = ParsedDocuments(tmp_path / "parsed")
    _research(corpus, tmp_path / "one", kept)
    [index] = _indexes(kept)
    before = index.read_bytes()
    other = ParsedDocuments(tmp_path / "parsed", version="another reader")
    assert _research(corpus, tmp_path / "two", other) == _research(corpus, tmp_path / "off", None)
    assert index.read_bytes() != before


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: _flip(data, len(data) // 2),
        lambda data: b"",
    ],
    ids=["truncated", "changed", "empty"],
)
def test_a_damaged_index_is_named_in_a_warning_built_again_and_rewritten(
    corpus: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[bytes], bytes],
) -> None:
    kept = ParsedDocuments(tmp_path / "parsed")
    _research(corpus, tmp_path / "one", kept)
    [index] = _indexes(kept)
    index.write_bytes(damage(index.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="app.agents.kept_index"):
        again = _research(corpus, tmp_path / "two", kept)
    [warning] = _warnings(caplog)
    assert WARNING in warning and str(index) in warning
    assert again.model_dump() == _research(corpus, tmp_path / "off", None).model_dump()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="app.agents.kept_index"):
        _research(corpus, tmp_path / "three", kept)
    assert _warnings(caplog) == []  # rewritten whole: it checks out


def test_an_index_whose_passages_do_not_fit_the_texts_read_is_not_used(
    corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file whose sha256 checks out is still checked against the texts read now."""
    kept = ParsedDocuments(tmp_path / "parsed")
    _research(corpus, tmp_path / "one", kept)
    [index] = _indexes(kept)
    arrays = dict(np.load(io.BytesIO(read_kept(index, None)), allow_pickle=False))
    arrays["passages"][0, 2] = 10**9  # a sentence ending past its source's text
    forged = io.BytesIO()
    np.savez(forged, **arrays)
    write_kept(index, None, forged.getvalue())
    with caplog.at_level(logging.WARNING, logger="app.agents.kept_index"):
        again = _research(corpus, tmp_path / "two", kept)
    [warning] = _warnings(caplog)
    assert "outside its source's text" in warning
    assert again.model_dump() == _research(corpus, tmp_path / "off", None).model_dump()


def test_under_a_key_the_index_is_sealed_and_a_clear_one_is_not_trusted(
    corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys = parse_keys(new_key())
    sealed = ParsedDocuments(tmp_path / "sealed", keys)
    found = _research(corpus, tmp_path / "one", sealed)
    [index] = _indexes(sealed)
    data = index.read_bytes()
    assert data.startswith(MAGIC)
    assert b"Rosetta" not in data and b"rosetta" not in data and b"passages" not in data
    stamp = written(index)
    assert _research(corpus, tmp_path / "two", sealed) == found
    assert written(index) == stamp  # opened under the key and used
    with caplog.at_level(logging.WARNING, logger="app.agents.kept_index"):
        _research(corpus, tmp_path / "three", ParsedDocuments(tmp_path / "sealed"))
    [warning] = _warnings(caplog)
    assert WARNING in warning  # no key: it does not open, and is built again
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="app.agents.kept_index"):
        _research(corpus, tmp_path / "four", sealed)
    [warning] = _warnings(caplog)
    assert "in the clear" in warning  # the index built without the key
    assert index.read_bytes().startswith(MAGIC)  # sealed again


def test_documents_only_keeps_no_index(corpus: Path, tmp_path: Path) -> None:
    kept = ParsedDocuments(tmp_path / "parsed", indexes=False)
    _research(corpus, tmp_path / "one", kept)
    assert _documents(kept)
    assert _indexes(kept) == []
