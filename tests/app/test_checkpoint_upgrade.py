"""A thread checkpointed before a contract's version was raised resumes after it.

The fixture (tests/fixtures/checkpoints, see make_fixture.py there) holds a real SQLite
thread saved while every contract was at 1.0, waiting for approval of its research. Since
then Handoff went to 1.1: ``next_allowed_action`` names the next graph node instead of an
action verb, and an upgrader maps the old verbs. Resuming that thread must route by the
upgraded handoff and finish; without the upgrader it must be refused, loudly.
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
from langgraph.errors import is_invalid_resume
from langgraph.types import Command
from pydantic import ValidationError

from app.errors import InvalidDecision
from app.settings import Settings
from app.source_probe import FileSourceProbe
from app.workflow import Workflow
from contracts import Handoff, RunOutcome, TaskState, VersionedContract
from graphs import workflow_channels
from graphs.human import bound_id
from tests.backends import sqlite_settings

FIXTURE = Path(__file__).parents[1] / "fixtures" / "checkpoints" / "v1_waiting_approval"
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


def stored_handoff(database: Path) -> dict[str, Any]:
    """The handoff the latest checkpoint stores, read without reviving any class.

    The fixture's checkpoints hold it inline (LangGraph's SqliteSaver); one saved since
    holds its version, and the value is in that version's blob row.
    """
    with closing(sqlite3.connect(database)) as conn:
        checkpoint = _raw(
            conn.execute(
                "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? "
                "ORDER BY checkpoint_id DESC LIMIT 1",
                (THREAD,),
            ).fetchone()
        )
        handoff: dict[str, Any] = checkpoint["channel_values"].get("handoff") or _raw(
            conn.execute(
                "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = ? "
                "AND checkpoint_ns = '' AND channel = 'handoff' AND version = ?",
                (THREAD, str(checkpoint["channel_versions"]["handoff"])),
            ).fetchone()
        )
    return handoff


def _raw(stored: tuple[str, bytes]) -> Any:
    """A stored value as plain data: no class of the project is revived."""
    logging.getLogger("langgraph.checkpoint.serde.jsonplus").disabled = True
    try:
        return JsonPlusSerializer(allowed_msgpack_modules=None).loads_typed(stored)
    finally:
        logging.getLogger("langgraph.checkpoint.serde.jsonplus").disabled = False


def test_the_fixture_was_saved_with_handoff_at_version_1_0() -> None:
    assert MANIFEST["contract_versions"]["Handoff"] == "1.0"
    raw = stored_handoff(FIXTURE / "handoff.db")
    assert (raw["schema_version"], raw["next_allowed_action"]) == ("1.0", "write")
    assert Handoff.VERSION != "1.0"


def test_a_thread_saved_before_the_handoff_version_bump_resumes_to_completion(
    fixture_copy: Path,
) -> None:
    with open_fixture(fixture_copy) as workflow:
        handoff = workflow.state(THREAD)["handoff"]
        assert type(handoff) is Handoff
        assert (handoff.schema_version, handoff.next_allowed_action) == (Handoff.VERSION, "writer")

        request = workflow.pending(THREAD)
        assert request is not None
        assert request.interrupt_id == MANIFEST["interrupt_id"]
        outcome = workflow.resume(
            THREAD, {"interrupt_id": request.interrupt_id, "action": "approve", "decided_by": "t"}
        )

        assert (outcome.state, outcome.result_status) == (TaskState.COMPLETED, "completed")
        assert outcome.article is not None
        article = workflow.artifact(THREAD, "article").decode("utf-8")
        assert "Rosetta" in article
        nodes = [run.node_id for run in workflow.history(THREAD)]
        assert nodes[-4:] == ["approve_research", "writer", "reviewer", "finalize"]

        state = workflow.state(THREAD)
    for channel, value in state.items():
        if isinstance(value, VersionedContract):
            model = workflow_channels()[channel].contract
            again = model.model_validate(value.model_dump(mode="json"))
            assert again.schema_version == model.VERSION, channel
    final = Handoff.model_validate(state["handoff"].model_dump(mode="json"))
    assert final.schema_version == "1.1"
    assert [d.provenance.producer for d in final.accepted_decisions] == ["human"]
    assert stored_handoff(fixture_copy / "handoff.db")["schema_version"] == "1.1"


def test_the_old_request_names_no_thread_and_refuses_a_decision_bound_to_another(
    fixture_copy: Path,
) -> None:
    with open_fixture(fixture_copy) as workflow:
        request = workflow.pending(THREAD)
        assert request is not None
        assert (request.interrupt_id, request.thread_id) == (MANIFEST["interrupt_id"], None)
        checkpoints = workflow.checkpoint_count(THREAD)
        other = bound_id(MANIFEST["interrupt_id"], "t-other")
        with pytest.raises(InvalidDecision, match="does not match the open request"):
            workflow.resume(THREAD, {"interrupt_id": other, "action": "approve"})
        assert workflow.pending(THREAD) == request
        assert workflow.checkpoint_count(THREAD) == checkpoints


def test_the_graph_asks_the_old_pause_bound_to_its_thread_and_says_so_to_an_unbound_resume(
    fixture_copy: Path,
) -> None:
    """Served clients send the resume straight to the graph, which rebuilds the request."""
    with open_fixture(fixture_copy) as workflow:
        request = workflow.pending(THREAD)
        config = workflow.config(THREAD)
        with pytest.raises(ValidationError) as caught:
            workflow.graph.invoke(
                Command(resume={"interrupt_id": MANIFEST["interrupt_id"], "action": "approve"}),
                config,
                context=workflow.context,
            )
        assert is_invalid_resume(caught.value)
        assert f"this thread's open request is '{MANIFEST['interrupt_id']}.{THREAD}'" in str(
            caught.value
        )
        assert workflow.pending(THREAD) == request, "still waiting on the saved request"


# LangGraph revives the unreadable handoff with model_construct and re-serializes that
# half-built object (nested parts still dicts); pydantic warns about it, as it should.
@pytest.mark.filterwarnings("ignore::UserWarning:pydantic.main")
def test_without_the_upgrader_the_old_thread_is_refused_naming_the_version(
    fixture_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Handoff, "UPGRADE_STEPS", {})
    monkeypatch.setattr(Handoff, "SUPPORTED_VERSIONS", (Handoff.VERSION,))
    with open_fixture(fixture_copy) as workflow:
        request = workflow.pending(THREAD)
        assert request is not None
        try:
            outcome: RunOutcome | None = workflow.resume(
                THREAD, {"interrupt_id": request.interrupt_id, "action": "approve"}
            )
        except Exception as error:  # refused by raising is as good as a failed outcome
            outcome = None
            message = str(error)
        else:
            assert outcome.state != TaskState.COMPLETED
            message = outcome.model_dump_json()
    assert "unsupported schema_version '1.0' for Handoff" in message
