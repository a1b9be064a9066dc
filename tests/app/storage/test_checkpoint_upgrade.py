"""A thread checkpointed before a contract's version was raised resumes after it.

The fixture (tests/fixtures/checkpoints, see make_fixture.py there) is a real SQLite thread
saved by the project's own code while HumanRequest was at 1.1 and every other contract was
already at its current version, waiting for approval of its research. HumanRequest 1.2
made a pause's kind and actions declared names and added ``details``; its upgrader takes a
1.1 request as it is. Resuming that thread must read the saved request through the
upgrader and finish; without the upgrader it must be refused, naming the version.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import ValidationError

from app.corpus.probe import FileSourceProbe
from app.settings import Settings
from app.workflow import Workflow
from contracts import HumanRequest, TaskState, VersionedContract, registered
from graphs import workflow_channels
from tests.backends import sqlite_settings
from tests.conftest import passes

FIXTURE = Path(__file__).parents[2] / "fixtures" / "checkpoints" / "request_1_1_waiting_approval"
MANIFEST: dict[str, Any] = json.loads((FIXTURE / "manifest.json").read_text(encoding="utf-8"))
THREAD = MANIFEST["thread_id"]


@dataclass(frozen=True)
class MovedCorpusProbe:
    """Sources recorded under the generating machine's corpus folder, hashed in our copy.

    The hashes are still checked for real: an edited copy would make the thread stale.
    """

    recorded_root: str
    copy_root: Path
    files: FileSourceProbe

    def current_sha256(self, uri: str) -> str | None:
        path = unquote(urlparse(uri).path)
        if path.startswith(self.recorded_root + "/"):
            uri = (self.copy_root / path.removeprefix(self.recorded_root + "/")).as_uri()
        return self.files.current_sha256(uri)


@pytest.fixture
def fixture_copy(tmp_path: Path) -> Path:
    """A writable copy: resuming appends checkpoints, and the committed files must not change."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "fixture"))


def open_fixture(folder: Path) -> Workflow:
    settings: Settings = sqlite_settings(folder).model_copy(
        update={
            "model": "offline",
            "fault": None,
            "artifact_store": "filesystem",
            "corpus": [folder / "corpus"],
        }
    )
    opened = Workflow(settings)
    probe = MovedCorpusProbe(
        MANIFEST["corpus_root"], folder / "corpus", FileSourceProbe(settings.corpus_policy())
    )
    return Workflow(settings, context=replace(opened.context, sources=probe))


def _stored(database: Path, query: str) -> Any:
    """One stored value exactly as the old code wrote it, read without reviving any class."""
    with closing(sqlite3.connect(database)) as conn:
        kind, blob = conn.execute(query, (THREAD,)).fetchone()
    logging.getLogger("langgraph.checkpoint.serde.jsonplus").disabled = True
    try:
        return JsonPlusSerializer(allowed_msgpack_modules=None).loads_typed((kind, blob))
    finally:
        logging.getLogger("langgraph.checkpoint.serde.jsonplus").disabled = False


def test_the_fixture_was_saved_with_human_request_at_1_1_and_the_rest_of_the_thread_current() -> (
    None
):
    saved = MANIFEST["contract_versions"]
    current = {model.__name__: model.VERSION for model in registered()}
    older = {name for name, version in saved.items() if current[name] != version}
    # Later versions (Handoff 1.2, NodeRun 1.2-1.3, RunOutcome 1.1, ResearchBundle 1.2, and
    # any a project adds) are upgraded on resume too; the pause's contracts are what this
    # fixture is for
    assert {"HumanRequest", "HumanDecision", "DecisionLog"} <= older
    assert saved["HumanRequest"] == "1.1"
    database = FIXTURE / "handoff.db"
    channels = _stored(
        database,
        "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? "
        "ORDER BY checkpoint_id DESC LIMIT 1",
    )["channel_values"]
    assert "decisions" not in channels, "waiting for its first decision: no log, no decision"
    interrupts = _stored(
        database,
        "SELECT type, value FROM writes WHERE thread_id = ? AND channel = '__interrupt__' "
        "ORDER BY checkpoint_id DESC LIMIT 1",
    )
    request = interrupts[0].value
    assert (request["schema_version"], request["interrupt_id"]) == ("1.1", MANIFEST["interrupt_id"])


def test_a_thread_saved_before_human_request_1_2_resumes_to_completion(
    fixture_copy: Path,
) -> None:
    with open_fixture(fixture_copy) as workflow:
        request = workflow.pending(THREAD)
        assert type(request) is HumanRequest
        assert (request.schema_version, request.interrupt_id, request.thread_id) == (
            HumanRequest.VERSION,
            MANIFEST["interrupt_id"],
            THREAD,
        )
        outcome = workflow.resume(
            THREAD, {"interrupt_id": request.interrupt_id, "action": "approve", "decided_by": "t"}
        )

        assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
        assert outcome.article is not None
        article = workflow.artifact(THREAD, "article").decode("utf-8")
        assert "Rosetta" in article
        nodes = [run.node_id for run in workflow.history(THREAD)]
        path = ("approve_research", "writer", "reviewer", "finalize")
        assert passes(nodes, *path) == [*path], "the approval, then the rest of the run"

        state = workflow.state(THREAD)
    for channel, value in state.items():
        if isinstance(value, VersionedContract):
            model = workflow_channels()[channel].contract
            again = model.model_validate(value.model_dump(mode="json"))
            assert again.schema_version == model.VERSION, channel
    assert [item.action for item in state["decisions"].decisions] == ["approve"]


def test_without_the_upgrader_the_old_thread_is_refused_naming_the_version(
    fixture_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HumanRequest, "UPGRADE_STEPS", {})
    monkeypatch.setattr(HumanRequest, "SUPPORTED_VERSIONS", (HumanRequest.VERSION,))
    with open_fixture(fixture_copy) as workflow:
        checkpoints = workflow.checkpoint_count(THREAD)
        with pytest.raises(ValidationError) as caught:
            workflow.resume(THREAD, {"interrupt_id": MANIFEST["interrupt_id"], "action": "approve"})
        assert workflow.checkpoint_count(THREAD) == checkpoints, "nothing ran"
    refusal = (
        f"unsupported schema_version '1.1' for HumanRequest; supported: {HumanRequest.VERSION}"
    )
    assert refusal in str(caught.value)
