"""Big corpora: a file-count limit at the door, and listings that never read the bundle.

A corpus over ``HANDOFF_CORPUS_MAX_FILES`` is refused before a file is read or a thread is
saved. Below the limit a corpus can still be large, so ``threads`` and ``status`` read only
what they print: the research bundle and the handoff envelope (which grow with the corpus)
are never decoded for them, on either backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.corpus import CorpusPolicy, discover
from app.settings import Settings
from app.workflow import Workflow
from graphs.errors import SourceRefused
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE, write_corpus


def _corpus(folder: Path, count: int) -> Path:
    return write_corpus(
        folder,
        {
            f"note-{index:03d}.md": f"# Note {index}\n\nThe Rosetta Stone carries one decree "
            f"in three scripts, note {index}.\n"
            for index in range(count)
        },
    )


def _policy(root: Path, max_files: int) -> CorpusPolicy:
    return CorpusPolicy(
        roots=(root.resolve(),), max_bytes=1 << 20, read_seconds=5, max_files=max_files
    )


def test_a_corpus_at_the_limit_is_found_and_one_more_is_refused_naming_the_setting(
    tmp_path: Path,
) -> None:
    corpus = _corpus(tmp_path / "corpus", 4)
    assert len(discover([corpus], _policy(tmp_path, 4))) == 4
    with pytest.raises(SourceRefused) as refused:
        discover([corpus], _policy(tmp_path, 3))
    message = refused.value.message
    assert "more than 3 documents" in message and "HANDOFF_CORPUS_MAX_FILES" in message
    assert str(corpus) in message


def test_the_limit_counts_documents_once_across_overlapping_locations(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus", 3)
    locations = [corpus, corpus / "note-000.md", corpus]
    assert len(discover(locations, _policy(tmp_path, 3))) == 3
    with pytest.raises(SourceRefused, match="more than 2 documents"):
        discover([corpus / "note-000.md", corpus / "note-001.md", corpus], _policy(tmp_path, 2))


def test_a_huge_tree_is_refused_without_walking_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _corpus(tmp_path / "corpus", 60)
    policy = _policy(tmp_path, 5)
    admitted: list[Path] = []
    admit = CorpusPolicy.admit

    def counting(self: CorpusPolicy, path: Path, what: str) -> Path:
        if what == "corpus file":
            admitted.append(path)
        return admit(self, path, what)

    monkeypatch.setattr(CorpusPolicy, "admit", counting)
    with pytest.raises(SourceRefused):
        discover([corpus], policy)
    assert len(admitted) == 6, "the walk stops at the first document over the limit"


def test_the_setting_reaches_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDOFF_CORPUS_MAX_FILES", "17")
    assert Settings().corpus_policy().max_files == 17
    monkeypatch.setenv("HANDOFF_CORPUS_MAX_FILES", "0")
    with pytest.raises(ValueError, match="corpus_max_files"):
        Settings()


def test_a_run_over_the_limit_saves_nothing(settings: Settings, tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus", 4)
    limited = settings.with_overrides(corpus_max_files=3)
    with Workflow(limited) as workflow:
        task = workflow.task(OBJECTIVE, corpus=[str(corpus)])
        with pytest.raises(SourceRefused, match="HANDOFF_CORPUS_MAX_FILES"):
            workflow.run(task, thread_id="t-big")
        assert workflow.threads() == []
        assert workflow.ledger.runs("t-big") == []
        assert workflow.backend.store.ids() == []


@pytest.mark.sqlite
def test_the_cli_refuses_a_corpus_over_the_limit_with_exit_2(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus", 4)
    data = tmp_path / "data"
    env = {"HANDOFF_CORPUS_MAX_FILES": "3", "HANDOFF_CORPUS_ROOTS": f'["{tmp_path}"]'}
    result = handoff("run", OBJECTIVE, "--corpus", str(corpus), data_dir=data, env=env)
    assert result.returncode == 2, result.stderr
    line = one_line_error(result)
    assert "more than 3 documents" in line and "HANDOFF_CORPUS_MAX_FILES" in line, line
    listed = handoff("threads", data_dir=data, env=env)
    assert listed.returncode == 0 and listed.stdout == "", listed
