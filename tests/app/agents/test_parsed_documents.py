"""Parsed documents kept by content: reuse changes nothing, and nothing kept is trusted blindly."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.agents import OfflineResearchAgent
from app.agents.parsed_documents import READER_VERSION, ParsedDocuments, parse, reader_version
from app.agents.selection import parsed_documents
from app.settings import BUNDLED_CORPUS, Settings
from app.storage.artifacts import FilesystemArtifactStore
from app.storage.encryption import MAGIC, new_key, parse_keys
from app.text.documents import MARKDOWN, PLAIN, RST
from contracts import ResearchBundle, TaskSpec
from graphs import ResearchRequest, StepInfo
from tests.conftest import OBJECTIVE, write_corpus

FIXED = datetime(2026, 1, 1, tzinfo=UTC)
TEXT = (
    "# Bees\n\nHoney bees dance to tell their sisters where flowers are. The waggle dance "
    "encodes the distance.\n\n## Scouts\n\nScouts leave the hive first.\n"
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _research(
    corpus: Path, store_dir: Path, kept: ParsedDocuments | None
) -> tuple[ResearchBundle, list[str]]:
    policy = Settings(corpus_roots=[corpus]).corpus_policy()
    agent = OfflineResearchAgent(
        default_corpus=[corpus], clock=lambda: FIXED, policy=policy, parsed_documents=kept
    )
    step = StepInfo(thread_id="t", node="research", step=1, task_version=1)
    task = TaskSpec(task_id="t", objective=OBJECTIVE)
    output = agent.run(ResearchRequest(task, FilesystemArtifactStore(store_dir), step))
    return output.result, [receipt.tool for receipt in output.receipts]


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def test_a_warm_run_finds_exactly_what_a_cold_one_and_one_without_keeping_find(
    tmp_path: Path,
) -> None:
    kept = ParsedDocuments(tmp_path / "parsed")
    plain, plain_reads = _research(BUNDLED_CORPUS, tmp_path / "off", None)
    cold, cold_reads = _research(BUNDLED_CORPUS, tmp_path / "cold", kept)
    entries = _entries(tmp_path / "parsed")
    assert len(entries) == len(cold.sources)
    stamps = [entry.stat().st_mtime_ns for entry in entries]
    warm, warm_reads = _research(BUNDLED_CORPUS, tmp_path / "warm", kept)
    assert [entry.stat().st_mtime_ns for entry in entries] == stamps  # read, not rewritten
    assert plain.facts
    assert plain.model_dump() == cold.model_dump() == warm.model_dump()
    assert plain_reads == cold_reads == warm_reads  # every file still read through the tool
    assert warm_reads.count("read_source") == len(warm.sources)


def test_a_kept_document_equals_the_parse_in_every_format(tmp_path: Path) -> None:
    kept = ParsedDocuments(tmp_path)
    texts = {
        MARKDOWN: TEXT,
        RST: "Bees\n====\n\nHoney bees dance. Scouts leave first.\n\n::\n\n    code here\n",
        PLAIN: "BEES\n\nHoney bees dance to tell their sisters where flowers are.\n",
    }
    for media, text in texts.items():
        first = kept.read(text, _sha(text), media)
        assert first == parse(text, media)
        assert kept.load(text, _sha(text), media) == first


def test_a_changed_file_is_read_and_parsed_anew(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", {"bees.md": TEXT})
    kept = ParsedDocuments(tmp_path / "parsed")
    _research(corpus, tmp_path / "one", kept)
    changed = TEXT.replace("Scouts leave the hive first.", "Scouts leave the nest at dawn.")
    (corpus / "bees.md").write_text(changed, encoding="utf-8")
    again, _ = _research(corpus, tmp_path / "two", kept)
    fresh, _ = _research(corpus, tmp_path / "three", None)
    assert again.model_dump() == fresh.model_dump()
    assert again.sources[0].sha256 == _sha(changed)  # the snapshot is of the bytes read now
    store = FilesystemArtifactStore(tmp_path / "two")
    assert store.get(again.sources[0].snapshot).decode() == changed
    assert len(_entries(tmp_path / "parsed")) == 2  # one per content read


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-10],
        lambda data: data.replace(b"dance", b"dunce"),
        lambda data: b"",
        lambda data: b"not an entry at all",
    ],
    ids=["truncated", "changed", "empty", "foreign"],
)
def test_a_damaged_entry_is_ignored_and_the_text_parsed_again(
    tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    kept = ParsedDocuments(tmp_path)
    kept.read(TEXT, _sha(TEXT), MARKDOWN)
    [entry] = _entries(tmp_path)
    entry.write_bytes(damage(entry.read_bytes()))
    assert kept.load(TEXT, _sha(TEXT), MARKDOWN) is None
    assert kept.read(TEXT, _sha(TEXT), MARKDOWN) == parse(TEXT, MARKDOWN)
    assert kept.load(TEXT, _sha(TEXT), MARKDOWN) == parse(TEXT, MARKDOWN)  # rewritten


def test_an_entry_whose_spans_do_not_fit_the_text_is_not_used(tmp_path: Path) -> None:
    """An entry with a valid digest is still checked against the text read now."""
    kept = ParsedDocuments(tmp_path)
    kept.read(TEXT, _sha(TEXT), MARKDOWN)
    [entry] = _entries(tmp_path)
    shorter = TEXT[:20]
    kept.save(parse(TEXT, MARKDOWN), _sha(shorter), MARKDOWN)  # the long text's document
    assert kept.load(shorter, _sha(shorter), MARKDOWN) is None
    assert kept.read(shorter, _sha(shorter), MARKDOWN) == parse(shorter, MARKDOWN)
    payload = entry.read_bytes().partition(b"\n")[2]
    renamed = json.loads(payload)
    renamed["media_type"] = PLAIN  # an entry kept under another name is not this one
    body = json.dumps(renamed).encode()
    other = kept.path(_sha(TEXT), PLAIN)
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    assert kept.load(TEXT, _sha(TEXT), PLAIN) is not None  # sanity: it names PLAIN now
    wrong = ParsedDocuments(tmp_path, version="another reader")
    assert wrong.path(_sha(TEXT), MARKDOWN) != kept.path(_sha(TEXT), MARKDOWN)
    assert wrong.load(TEXT, _sha(TEXT), MARKDOWN) is None


def test_under_a_key_entries_are_sealed_and_clear_ones_are_not_trusted(tmp_path: Path) -> None:
    keys = parse_keys(new_key())
    sealed = ParsedDocuments(tmp_path / "sealed", keys)
    sealed.read(TEXT, _sha(TEXT), MARKDOWN)
    [entry] = _entries(tmp_path / "sealed")
    data = entry.read_bytes()
    assert data.startswith(MAGIC)
    assert b"Honey" not in data and b"bees" not in data
    assert sealed.load(TEXT, _sha(TEXT), MARKDOWN) == parse(TEXT, MARKDOWN)
    assert ParsedDocuments(tmp_path / "sealed").load(TEXT, _sha(TEXT), MARKDOWN) is None
    other = ParsedDocuments(tmp_path / "sealed", parse_keys(new_key()))
    assert other.load(TEXT, _sha(TEXT), MARKDOWN) is None  # another key: parsed again
    ParsedDocuments(tmp_path / "clear").read(TEXT, _sha(TEXT), MARKDOWN)
    in_clear = ParsedDocuments(tmp_path / "clear", keys)
    assert in_clear.load(TEXT, _sha(TEXT), MARKDOWN) is None


def test_the_reader_version_is_that_of_the_code_loaded() -> None:
    assert reader_version() == READER_VERSION


def test_the_workflow_keeps_parsed_documents_in_its_data_folder_under_its_key(
    tmp_path: Path,
) -> None:
    key = new_key()
    kept = parsed_documents(Settings(data_dir=tmp_path, encryption_key=SecretStr(key)))
    assert kept.folder == tmp_path / "parsed"
    assert kept.keys is not None
    assert parsed_documents(Settings(data_dir=tmp_path)).keys is None
