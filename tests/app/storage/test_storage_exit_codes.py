"""A recorded artifact whose stored bytes are gone: exit 8, one line naming the artifact.

docs/cli.md gives 5 to names the caller can correct (an unknown thread, artifact or source)
and 8 to stored bytes that fail their record. A blob the thread recorded and the store lost
is the second kind: the thread is right, the store is damaged. Every store is covered:
blobs in a folder (SQLite's store, and the plain filesystem store beside PostgreSQL) and
the PostgreSQL tables, where an operator's purge removes the artifact's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from app.errors import ArtifactLost
from app.exit_codes import ExitCode, for_error
from app.settings import Settings
from app.workflow import Workflow
from contracts import ArtifactRef
from graphs.errors import ArtifactNotFound
from tests.app.store_faults import delete
from tests.backends import backend_env, backend_settings, require_postgres
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE

STORES = [
    pytest.param(("sqlite", "auto"), marks=pytest.mark.sqlite, id="sqlite-folder-blobs"),
    pytest.param(("postgres", "auto"), marks=pytest.mark.postgres, id="postgres-tables"),
    pytest.param(
        ("postgres", "filesystem"), marks=pytest.mark.postgres, id="postgres-filesystem-store"
    ),
]


@pytest.fixture(params=STORES)
def finished(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """Settings of a store holding one finished thread, ``t-lost``."""
    database, artifact_store = request.param
    with backend_settings(database, tmp_path / "data") as chosen:
        settings = chosen.with_overrides(artifact_store=artifact_store, model="offline")
        with Workflow(settings) as workflow:
            outcome = workflow.run(OBJECTIVE, thread_id="t-lost")
        assert outcome.result_status == "completed", outcome
        yield settings


def _lose(settings: Settings, name: str) -> ArtifactRef:
    """Delete the stored bytes of the thread's artifact ``name``; returns its ref."""
    with Workflow(settings) as workflow:
        ref = workflow.artifact_ref("t-lost", name)
        delete(workflow.backend.store, ref)
    return ref


def _assert_lost(settings: Settings, args: list[str], ref: ArtifactRef) -> None:
    result = handoff(*args, env=backend_env(settings))
    assert result.returncode == ExitCode.INTEGRITY, (args, result.returncode, result.stderr)
    line = one_line_error(result)
    assert ref.uri in line and "deleted or lost" in line, line
    assert result.stdout == "", "nothing of the artifact is printed"


@pytest.mark.e2e
def test_show_of_a_lost_article_exits_integrity_naming_it(finished: Settings) -> None:
    ref = _lose(finished, "article")
    _assert_lost(finished, ["show", "t-lost"], ref)
    _assert_lost(finished, ["show", "t-lost", "--artifact", "article"], ref)
    with Workflow(finished, read_only=True) as workflow:
        with pytest.raises(ArtifactLost) as raised:
            workflow.artifact("t-lost", "article")
        assert for_error(raised.value) == ExitCode.INTEGRITY
        assert isinstance(raised.value, ArtifactNotFound), "freshness checks still see 'missing'"
        assert workflow.backend.store.verify(ref) == "missing"


@pytest.mark.e2e
def test_every_command_reading_a_lost_source_snapshot_exits_integrity(
    finished: Settings,
) -> None:
    with Workflow(finished, read_only=True) as workflow:
        cited = [entry.id for entry in workflow.sources("t-lost") if entry.cited_by]
    ref = _lose(finished, cited[0])
    for args in (
        ["sources", "t-lost"],
        ["sources", "t-lost", "--json"],
        ["show", "t-lost", "--source", cited[0]],
        ["show", "t-lost", "--artifact", cited[0]],
    ):
        _assert_lost(finished, args, ref)
    status = handoff("status", "t-lost", env=backend_env(finished))
    assert status.returncode == ExitCode.COMPLETED, "status reads no artifact bytes"


@pytest.mark.e2e
def test_an_unknown_source_is_still_not_found(finished: Settings) -> None:
    result = handoff("show", "t-lost", "--source", "src-999", env=backend_env(finished))
    assert result.returncode == ExitCode.NOT_FOUND, result.stderr


@pytest.mark.e2e
@pytest.mark.sqlite
def test_resume_after_lost_research_blobs_reads_the_corpus_again(tmp_path: Path) -> None:
    """A paused thread whose research artifacts were lost is not stuck, nor a crash.

    The writer's input check finds the snapshots and notes missing and research runs
    again from the corpus (the source of truth), storing them anew.
    """
    with backend_settings("sqlite", tmp_path / "data") as settings:
        env = backend_env(settings)
        paused = handoff("run", OBJECTIVE, "--thread", "t-lost", "--require-approval", env=env)
        assert paused.returncode == ExitCode.WAITING_FOR_HUMAN, paused.stderr
        blobs = list((settings.resolved_artifact_dir() / "blobs").rglob("*"))
        for blob in blobs:
            if blob.is_file():
                blob.unlink()
        resumed = handoff("resume", "t-lost", "--approve", env=env)
        assert resumed.returncode == ExitCode.WAITING_FOR_HUMAN, resumed.stderr
        assert "is missing" in resumed.stderr, "the missing inputs are named"
        notes = handoff("show", "t-lost", "--artifact", "notes", env=env)
        assert notes.returncode == ExitCode.COMPLETED, notes.stderr


@pytest.mark.e2e
@pytest.mark.postgres
def test_a_database_that_does_not_exist_is_a_usage_error_naming_it_not_an_outage(
    tmp_path: Path,
) -> None:
    """exit 9 says "resume once it is back"; no wait brings back a database never created."""
    server = urlsplit(require_postgres())
    missing = server._replace(path="/handoff_no_such_db").geturl()
    result = handoff("run", OBJECTIVE, env={"HANDOFF_DATABASE_URL": missing}, data_dir=tmp_path)
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = one_line_error(result)
    assert "database 'handoff_no_such_db', which does not exist" in line, line
    assert "`createdb handoff_no_such_db`" in line and "HANDOFF_DATABASE_URL" in line
    down = server._replace(netloc=f"{server.username}@127.0.0.1:1", path="/handoff_no_such_db")
    outage = handoff("run", OBJECTIVE, env={"HANDOFF_DATABASE_URL": down.geturl()})
    assert outage.returncode == ExitCode.DATABASE_UNAVAILABLE, outage.stderr


@pytest.mark.e2e
@pytest.mark.postgres
def test_a_role_that_does_not_exist_is_a_usage_error_naming_it_not_an_outage(
    tmp_path: Path,
) -> None:
    """No wait brings back a role never created, as none brings back a missing database."""
    server = urlsplit(require_postgres())
    no_role = server._replace(netloc=f"handoff_no_such_role@{server.hostname}:{server.port}")
    env = {"HANDOFF_DATABASE_URL": no_role.geturl()}
    result = handoff("run", OBJECTIVE, env=env, data_dir=tmp_path)
    assert result.returncode == ExitCode.USAGE, result.stderr
    line = one_line_error(result)
    assert "role 'handoff_no_such_role', which does not exist" in line, line
    assert "`createuser handoff_no_such_role`" in line and "HANDOFF_DATABASE_URL" in line
    assert "createdb" not in line, "a missing role is no missing database"
