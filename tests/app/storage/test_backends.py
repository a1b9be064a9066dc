"""Opening backends from settings: schema creation, artifact placement, locks, the audit."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from procrastinate.schema import SchemaManager

from app.errors import ThreadBusy
from app.services import build_context
from app.settings import Settings
from app.storage.artifacts import (
    FilesystemArtifactStore,
    MemoryArtifactStore,
    PostgresArtifactStore,
)
from app.storage.backends import (
    BACKENDS,
    UnsupportedDatabaseUrl,
    init_database,
    ledger_for_url,
    open_backend,
    open_checkpointer,
)
from app.storage.backends.sqlite import SqliteBackend
from app.storage.ledger.memory import MemoryRunLedger
from app.storage.ledger.postgres import PostgresRunLedger
from app.storage.locks import FileThreadLock
from app.workflow import Workflow
from tests.backends import backend_env, postgres_schema, sqlite_settings
from tests.cli import HANDOFF, handoff, one_line_error
from tests.conftest import OBJECTIVE

QUEUE_TABLES = set(re.findall(r"CREATE TABLE (procrastinate_\w+)", SchemaManager.get_schema()))
"""The worker fleet's tables, as Procrastinate's schema names them (`db init` creates them)."""

TABLES = {
    "checkpoint_blobs",
    "checkpoint_migrations",
    "checkpoint_writes",
    "checkpoints",
    "handoff_artifact_blobs",
    "handoff_artifact_revisions",
    "handoff_artifacts",
    "handoff_node_runs",
    "handoff_tool_effects",
}


def _schema_of(url: str) -> str:
    return url.rsplit("%3D", 1)[1]


def _tables(url: str, schema: str) -> set[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchall()
    return {name for (name,) in rows}


@pytest.mark.e2e
@pytest.mark.postgres
def test_db_init_creates_every_table_in_the_urls_schema_and_can_run_again(
    tmp_path: Path,
) -> None:
    with postgres_schema() as url:
        settings = sqlite_settings(tmp_path).model_copy(update={"database_url": url})
        command = [str(HANDOFF)] if HANDOFF.exists() else [sys.executable, "-m", "app.cli"]
        first = subprocess.run(
            [*command, "db", "init"], env=backend_env(settings), capture_output=True, text=True
        )
        assert first.returncode == 0, first.stderr
        schema = _schema_of(url)
        assert f"table {schema}.handoff_node_runs" in first.stdout
        assert "worker queue: created (Procrastinate)" in first.stdout
        assert _tables(url, schema) == TABLES | QUEUE_TABLES
        assert init_database(settings) == init_database(settings)  # idempotent
        again = subprocess.run(
            [*command, "db", "init"], env=backend_env(settings), capture_output=True, text=True
        )
        assert again.returncode == 0 and "worker queue: present" in again.stdout, again.stderr
        assert _tables(url, schema) == TABLES | QUEUE_TABLES


def test_db_init_on_sqlite_creates_the_file_and_its_tables(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path / "data").with_overrides(artifact_store="auto")
    found = init_database(settings)
    assert (tmp_path / "data" / "handoff.db").exists()
    assert any("handoff_node_runs" in line for line in found)
    assert any("checkpoints" in line for line in found)
    assert found[-1] == f"artifacts in the folder {tmp_path / 'data' / 'artifacts'}"


@pytest.mark.postgres
def test_artifacts_go_to_the_database_by_default_and_to_a_folder_when_asked(
    tmp_path: Path,
) -> None:
    with postgres_schema() as url:
        base = sqlite_settings(tmp_path / "data").with_overrides(
            database_url=url, artifact_store="auto"
        )
        with open_backend(base) as backend:
            assert isinstance(backend.store, PostgresArtifactStore)
            assert isinstance(backend.ledger, PostgresRunLedger)
        on_disk = base.model_copy(update={"artifact_store": "filesystem"})
        with Workflow(on_disk) as workflow:
            assert isinstance(workflow.backend.store, FilesystemArtifactStore)
            outcome = workflow.run(OBJECTIVE, "t-files")
            assert outcome.article is not None
            assert (tmp_path / "data" / "artifacts" / "refs" / "t-files-article.json").exists()
            assert workflow.artifact("t-files", "article")
        with psycopg.connect(url, autocommit=True) as conn:
            [(rows,)] = conn.execute("SELECT count(*) FROM handoff_artifact_blobs").fetchall()
            assert rows == 0, "nothing went to the database"


def test_a_database_artifact_store_needs_a_postgresql_url(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path).model_copy(update={"artifact_store": "database"})
    with pytest.raises(UnsupportedDatabaseUrl, match="needs a postgresql:// database URL"):
        Workflow(settings).open()
    assert not (tmp_path / "handoff.db").exists(), "refused before anything was created"


def test_a_memory_artifact_store_beside_a_database_file_is_refused_before_opening(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path).model_copy(update={"artifact_store": "memory"})
    with pytest.raises(UnsupportedDatabaseUrl, match="loses every artifact when the process"):
        Workflow(settings).open()
    assert not (tmp_path / "handoff.db").exists(), "refused before anything was created"


def test_a_memory_ledger_or_store_beside_a_database_file_is_refused_however_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = sqlite_settings(tmp_path)
    for context, named in [
        (build_context(settings, MemoryRunLedger()), r"the run ledger \(MemoryRunLedger\) keeps"),
        (
            replace(build_context(settings), store=MemoryArtifactStore()),
            r"the artifact store \(MemoryArtifactStore\) keeps",
        ),
    ]:
        with Workflow(settings, context=context) as workflow:
            with pytest.raises(UnsupportedDatabaseUrl, match=named):
                workflow.run(OBJECTIVE, "t-kept")
            assert workflow.threads() == [], "refused before the thread was saved"
    monkeypatch.setattr(SqliteBackend, "ledger", lambda self, *args, **kw: MemoryRunLedger())
    with pytest.raises(UnsupportedDatabaseUrl, match="HANDOFF_DATABASE_URL=memory:// with it"):
        Workflow(settings).open()


@pytest.mark.e2e
def test_the_cli_refuses_a_memory_artifact_store_beside_a_database_file_in_one_line_exit_2(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path).model_copy(update={"artifact_store": "memory"})
    refused = handoff("db", "init", env=backend_env(settings))
    assert refused.returncode == 2
    assert "HANDOFF_DATABASE_URL=memory://" in one_line_error(refused)
    assert not (tmp_path / "handoff.db").exists()


def test_a_workflow_on_the_memory_artifact_store_completes_and_reads_its_article(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path).model_copy(
        update={"database_url": "memory://", "artifact_store": "memory"}
    )
    with Workflow(settings) as workflow:
        assert isinstance(workflow.backend.store, MemoryArtifactStore)
        outcome = workflow.run(OBJECTIVE, "t-mem")
        assert outcome.article is not None
        article = workflow.artifact("t-mem", "article")
        assert article
        assert workflow.backend.store.verify(outcome.article) == "fresh"
    assert not (tmp_path / "artifacts").exists(), "nothing was written to a folder"


def test_an_unknown_scheme_is_refused_naming_every_registered_scheme(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path).model_copy(update={"database_url": "mysql://db/x"})
    with pytest.raises(UnsupportedDatabaseUrl) as raised:
        with open_backend(settings):
            pass
    message = str(raised.value)
    assert "unsupported database URL scheme 'mysql' in 'mysql://db/x'" in message
    for scheme in BACKENDS:
        assert f"{scheme} (" in message
    with pytest.raises(UnsupportedDatabaseUrl, match="supported schemes"):
        open_checkpointer("mysql://db/x")


@pytest.mark.parametrize(
    ("scheme", "ledger", "lock", "store"),
    [
        ("memory", "MemoryRunLedger", "MemoryThreadLock", "FilesystemArtifactStore"),
        ("sqlite", "SqliteRunLedger", "FileThreadLock", "SqliteArtifactStore"),
        pytest.param(
            "postgresql",
            "PostgresRunLedger",
            "PostgresThreadLock",
            "PostgresArtifactStore",
            marks=pytest.mark.postgres,
        ),
        pytest.param(
            "postgres",
            "PostgresRunLedger",
            "PostgresThreadLock",
            "PostgresArtifactStore",
            marks=pytest.mark.postgres,
        ),
    ],
)
def test_each_registered_scheme_opens_its_parts_together_and_runs(
    tmp_path: Path, scheme: str, ledger: str, lock: str, store: str
) -> None:
    with contextlib.ExitStack() as stack:
        if scheme == "memory":
            url = "memory://"
        elif scheme == "sqlite":
            url = f"sqlite:///{tmp_path / 'handoff.db'}"
        else:
            url = stack.enter_context(postgres_schema()).replace("postgresql:", f"{scheme}:", 1)
        settings = sqlite_settings(tmp_path).with_overrides(database_url=url, artifact_store="auto")
        assert scheme in BACKENDS
        with Workflow(settings) as workflow:
            backend = workflow.backend
            assert type(backend.ledger).__name__ == ledger
            assert type(backend.lock).__name__ == lock
            assert type(backend.store).__name__ == store
            outcome = workflow.run(OBJECTIVE, "t-reg")
            assert outcome.article is not None
            assert [run.status for run in workflow.history("t-reg")][-1] == "succeeded"
            assert workflow.artifact("t-reg", "article")


def test_ledger_for_url_knows_every_backend(tmp_path: Path) -> None:
    assert type(ledger_for_url("memory://")).__name__ == "MemoryRunLedger"
    assert type(ledger_for_url(f"sqlite:///{tmp_path}/x.db")).__name__ == "SqliteRunLedger"
    ledger = ledger_for_url("postgresql://nobody@127.0.0.1:1/none")
    assert isinstance(ledger, PostgresRunLedger)
    ledger.close()  # opened nothing, so nothing to close
    with pytest.raises(UnsupportedDatabaseUrl, match="mysql"):
        ledger_for_url("mysql://x")


@pytest.mark.postgres
def test_a_postgres_ledger_with_its_own_pool_creates_its_table_and_closes_it(
    tmp_path: Path,
) -> None:
    with postgres_schema() as url, Workflow(sqlite_settings(tmp_path)) as scratch:
        scratch.run(OBJECTIVE, "t-src")
        runs = scratch.history("t-src")
        ledger = ledger_for_url(url)
        try:
            seqs = [ledger.start("t-a", run) for run in runs]
            assert seqs == list(range(1, len(runs) + 1))
            assert ledger.runs("t-a") == runs
            assert ledger.abandon_running("t-a", "gone") == 0
        finally:
            ledger.close()
        assert "handoff_node_runs" in _tables(url, _schema_of(url))


def test_a_file_lock_is_exclusive_per_thread_and_removed_after(tmp_path: Path) -> None:
    first, second = FileThreadLock(tmp_path / "locks"), FileThreadLock(tmp_path / "locks")
    with first.hold("t-1"):
        assert first.holding("t-1") and not second.holding("t-1")
        with pytest.raises(ThreadBusy, match=rf"pid {os.getpid()} on "):
            with second.hold("t-1"):
                pass
        with second.hold("t-2"):
            assert second.holding("t-2")
    assert not first.holding("t-1")
    assert list((tmp_path / "locks").iterdir()) == []
    with second.hold("t-1"):
        pass


def test_a_file_lock_taken_on_a_removed_file_starts_over(tmp_path: Path) -> None:
    """A racer that opened the lock file just before its holder removed it must not hold
    the removed file while a third process holds the new one."""
    lock = FileThreadLock(tmp_path / "locks")
    lock.directory.mkdir()
    stale = os.open(lock.directory / "t-1.lock", os.O_RDWR | os.O_CREAT)
    try:
        os.unlink(lock.directory / "t-1.lock")  # the old holder removed it on release
        with lock.hold("t-1"):
            path = lock.directory / "t-1.lock"
            assert path.exists() and os.stat(path).st_ino != os.fstat(stale).st_ino
    finally:
        os.close(stale)


@pytest.mark.postgres
def test_postgres_thread_locks_are_per_schema(tmp_path: Path) -> None:
    with postgres_schema() as one, postgres_schema() as two:
        first = sqlite_settings(tmp_path / "1").model_copy(update={"database_url": one})
        second = sqlite_settings(tmp_path / "2").model_copy(update={"database_url": two})
        with Workflow(first) as a, Workflow(first) as b, Workflow(second) as c:
            with a.backend.lock.hold("t-same"):
                assert a.backend.lock.holding("t-same")
                with pytest.raises(ThreadBusy, match=r"handoff-\d+ from"):
                    with b.backend.lock.hold("t-same"):
                        pass
                with c.backend.lock.hold("t-same"):  # another schema: another thread
                    assert c.backend.lock.writer("t-same") is not None
            assert a.backend.lock.writer("t-same") is None
            with b.backend.lock.hold("t-same"):
                pass


@pytest.mark.postgres
def test_a_released_postgres_thread_lock_is_free_before_its_session_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server ends a closed session after the client has moved on; the lock must not
    wait for that, or a caller taking the thread again at once finds it busy."""
    import app.storage.locks

    lingering: list[Any] = []
    real_connect = app.storage.locks.connect

    def slow_to_end(url: str, timeout: float) -> Any:
        conn = real_connect(url, timeout)
        real_close = conn.close
        conn.close = lambda: lingering.append(real_close)  # the session lives on
        return conn

    with postgres_schema() as url:
        settings = sqlite_settings(tmp_path).model_copy(update={"database_url": url})
        with Workflow(settings) as a, Workflow(settings) as b:
            monkeypatch.setattr(app.storage.locks, "connect", slow_to_end)
            try:
                with a.backend.lock.hold("t-again"):
                    pass
                assert lingering, "the first session is still open"
                with b.backend.lock.hold("t-again"):  # another process, right after
                    pass
            finally:
                for close in lingering:
                    close()


def test_a_memory_database_locks_within_the_process(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url="memory://")
    with Workflow(settings) as workflow:
        with workflow.backend.lock.hold("t-m"), pytest.raises(ThreadBusy):
            workflow.run(OBJECTIVE, "t-m")
        assert workflow.run(OBJECTIVE, "t-m").result_status == "completed"
