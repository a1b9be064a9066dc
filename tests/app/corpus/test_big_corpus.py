"""Big corpora: a file-count limit at the door, and listings that never read the bundle.

A corpus over ``HANDOFF_CORPUS_MAX_FILES`` is refused before a file is read or a thread is
saved. Below the limit a corpus can still be large, so ``threads`` and ``status`` read only
what they print: the research bundle and the handoff envelope (which grow with the corpus)
are never decoded for them, on either backend.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, get_checkpoint_id

from app.corpus.discovery import discover
from app.corpus.reading import CorpusPolicy
from app.settings import Settings
from app.storage.thread_reads import GlanceSaver
from app.workflow import Workflow
from graphs.errors import SourceRefused
from graphs.human import request_in
from tests.backends import backend_env
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


@pytest.mark.e2e
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


# -- listing reads only what it prints ---------------------------------------------------


def _threads_at_every_stop(workflow: Workflow) -> dict[str, str]:
    """Threads ended, waiting on approval and waiting on a review decision; by id."""
    ended = workflow.run(workflow.task(OBJECTIVE), thread_id="t-ended")
    approval = workflow.run(
        workflow.task(OBJECTIVE, policies={"require_approval": True}),
        thread_id="t-approval",
    )
    review = workflow.run(
        workflow.task(
            OBJECTIVE,
            constraints={"required_sections": ["Kubernetes Networking"]},
            budget={"max_review_rounds": 1},
            policies={"on_review_exhausted": "ask"},
        ),
        thread_id="t-review",
    )
    return {
        "t-ended": ended.state.value,
        "t-approval": approval.state.value,
        "t-review": review.state.value,
    }


def test_status_and_threads_read_as_the_full_state_says(workflow: Workflow, tmp_path: Path) -> None:
    states = _threads_at_every_stop(workflow)
    assert states == {
        "t-ended": "TASK_STATE_COMPLETED",
        "t-approval": "TASK_STATE_INPUT_REQUIRED",
        "t-review": "TASK_STATE_INPUT_REQUIRED",
    }
    saver = workflow.saver
    listed = sorted({item.config["configurable"]["thread_id"] for item in saver.list(None)})
    assert workflow.threads() == listed == sorted(states)
    for thread_id, state in states.items():
        full = workflow.graph.get_state(workflow.config(thread_id))
        status = workflow.status(thread_id)
        summary = workflow.summary(thread_id)
        assert status.next_nodes == summary.next_nodes == tuple(full.next)
        assert full.metadata is not None
        assert status.step == summary.step == full.metadata["step"]
        assert status.updated_at == summary.updated_at == full.created_at
        assert status.checkpoints == len(list(saver.list(workflow.config(thread_id))))
        bundle = full.values["research"]
        assert status.fact_count == len(bundle.facts) > 0
        draft = full.values.get("draft")
        assert status.draft_revision == (draft.revision if draft else None)
        assert workflow.outcome(thread_id) == summary.outcome
        assert summary.outcome.state.value == state
        if summary.outcome.human_request is not None:
            assert summary.outcome.human_request == request_in(full.interrupts[0].value)
            assert summary.outcome.fact_count == len(bundle.facts)


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every ResearchBundle or Handoff built, however a reader builds it."""
    from contracts import Handoff, ResearchBundle

    made: list[str] = []
    for model in (ResearchBundle, Handoff):
        for name in ("model_construct", "model_validate", "model_validate_json"):
            original = getattr(model, name)

            def recording(
                *args: object,
                _original: object = original,
                _name: str = model.__name__,
                **kwargs: object,
            ) -> object:
                made.append(_name)
                return _original(*args, **kwargs)  # type: ignore[operator]

            monkeypatch.setattr(model, name, recording)
        init = model.__init__

        def recording_init(
            self: object, *args: object, _init: object = init, **kwargs: object
        ) -> None:
            made.append(type(self).__name__)
            _init(self, *args, **kwargs)  # type: ignore[operator]

        monkeypatch.setattr(model, "__init__", recording_init)
    return made


def test_threads_and_status_never_build_the_research_bundle_or_the_handoff(
    workflow: Workflow, tmp_path: Path, built: list[str]
) -> None:
    _threads_at_every_stop(workflow)
    built.clear()
    for thread_id in workflow.threads():
        workflow.summary(thread_id)
        workflow.status(thread_id)
        workflow.outcome(thread_id)
    assert built == [], f"a listing decoded {sorted(set(built))}"
    workflow.graph.get_state(workflow.config("t-ended"))
    assert "ResearchBundle" in built, "the probe sees a full read build the bundle"


@pytest.mark.e2e
def test_the_cli_lists_and_shows_the_status_of_a_large_thread(
    settings: Settings, tmp_path: Path
) -> None:
    corpus = _corpus(tmp_path / "corpus", 150)
    with Workflow(settings) as workflow:
        outcome = workflow.run(workflow.task(OBJECTIVE, corpus=[str(corpus)]), thread_id="t-big")
    env = backend_env(settings) | {"HANDOFF_CORPUS_ROOTS": f'["{tmp_path}"]'}
    listed = handoff("threads", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [row["thread_id"] for row in rows] == ["t-big"]
    assert rows[0]["state"] == outcome.state.value
    status = handoff("status", "t-big", "--json", env=env)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["outcome"]["state"] == outcome.state.value
    assert shown["checkpoints"] >= 3 and shown["next"] == []


def test_threads_and_status_read_the_latest_checkpoint_and_no_ancestor(
    workflow: Workflow, monkeypatch: pytest.MonkeyPatch
) -> None:
    _threads_at_every_stop(workflow)
    named: list[str | None] = []
    original = GlanceSaver.get_tuple

    def recording(self: GlanceSaver, config: RunnableConfig) -> CheckpointTuple | None:
        named.append(get_checkpoint_id(config))
        return original(self, config)

    monkeypatch.setattr(GlanceSaver, "get_tuple", recording)
    for thread_id in workflow.threads():
        workflow.summary(thread_id)
        workflow.status(thread_id)
        workflow.outcome(thread_id)
    assert named and set(named) == {None}, "an ancestor was read: the glance walked the thread"
