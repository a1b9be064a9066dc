"""Encryption at rest: with HANDOFF_ENCRYPTION_KEY nothing of an article or a source is
readable in the SQLite file, the PostgreSQL tables or the data folder; a missing or wrong
key is one line and exit code 2 with nothing changed; a rotated key still reads.

Every test runs the real stores (an SQLite file and its folder, a PostgreSQL schema of its
own) and looks at the bytes they hold, as someone holding a copy of them would.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.exceptions import InvalidTag

from app.exit_codes import ExitCode
from app.settings import Settings
from app.storage.artifacts.folder_blobs import FolderBlobs
from app.storage.artifacts.postgres import PostgresArtifactStore
from app.storage.backends import backend_for, open_backend
from app.storage.encryption import (
    MAGIC,
    TEXT_PREFIX,
    AesGcmCipher,
    EncryptionKeyError,
    key_id,
    key_ring,
    new_key,
    open_blob,
    parse_keys,
    seal_blob,
)
from app.storage.ledger.base import SqlRunLedger
from app.storage.serde import contract_serializer
from app.workflow import Workflow
from contracts import ArtifactRef
from graphs.errors import IntegrityError
from tests.app.store_faults import tamper
from tests.backends import backend_env, backend_settings
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE

SOURCE_SENTENCE = b"Champollion was born in Figeac"
"""A sentence of the bundled corpus (examples/corpus/champollion.md) a run snapshots."""
NEEDLES = (SOURCE_SENTENCE, b"Figeac", b"Rosetta", b"hieroglyph")
"""Words of the sources, the task and the article: none may be stored in the clear."""

BACKENDS = [
    pytest.param("sqlite", marks=pytest.mark.sqlite, id="sqlite"),
    pytest.param("postgres", marks=pytest.mark.postgres, id="postgres"),
]


@pytest.fixture(params=BACKENDS)
def base(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """Settings of an empty store on one backend, on the database's own artifact store."""
    with backend_settings(request.param, tmp_path / "data") as chosen:
        yield chosen.with_overrides(
            artifact_store="auto",
            model="offline",
            fault=None,
            encryption_key=None,
            encryption_old_keys=None,
        )


def _plain(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False).encode()
    return str(value).encode()


def stored_bytes(settings: Settings) -> bytes:
    """Every byte the settings' stores hold: the data folder's files and, on PostgreSQL,
    every row of every table of the schema (each value as stored)."""
    found = [path.read_bytes() for path in sorted(settings.data_dir.rglob("*")) if path.is_file()]
    url = settings.resolved_database_url()
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() ORDER BY table_name"
            ).fetchall()
            for (table,) in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"').fetchall():
                    found.extend(_plain(value) for value in row if value is not None)
    return b"\n".join(found)


def snapshot(settings: Settings) -> dict[str, Any]:
    """What must not change: each file's bytes and mtime, and (PostgreSQL) every row."""
    files = {
        str(path.relative_to(settings.data_dir)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(settings.data_dir.rglob("*"))
        if path.is_file()
    }
    url = settings.resolved_database_url()
    rows: list[bytes] = []
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            for (table,) in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() ORDER BY table_name"
            ).fetchall():
                rows.append(table.encode())
                rows.extend(
                    _plain(row)
                    for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY 1').fetchall()
                )
    return {"files": files, "rows": rows}


def keyed(settings: Settings, key: str, old: str | None = None) -> Settings:
    return settings.with_overrides(encryption_key=key, encryption_old_keys=old)


def env_with(settings: Settings, **keys: str | None) -> dict[str, str]:
    env = backend_env(settings)
    for name, value in keys.items():
        if value is not None:
            env[f"HANDOFF_{name.upper()}"] = value
    return env


def stored_blob(settings: Settings, ref: ArtifactRef) -> bytes:
    """The bytes the artifact store keeps for a revision, unopened."""
    with Workflow(settings) as workflow:
        store = workflow.backend.store
        if isinstance(store, FolderBlobs):
            return (store.root / "blobs" / ref.sha256[:2] / ref.sha256).read_bytes()
        assert isinstance(store, PostgresArtifactStore)
        with store._session() as conn:
            row = conn.execute(
                "SELECT content FROM handoff_artifact_blobs WHERE sha256 = %s", (ref.sha256,)
            ).fetchone()
        assert row is not None
        return bytes(row["content"])


def latest_result(settings: Settings, thread_id: str) -> str:
    """The raw ``result`` column of the thread's latest succeeded attempt."""
    with Workflow(settings) as workflow:
        ledger = workflow.backend.ledger
        assert isinstance(ledger, SqlRunLedger)
        with ledger._cursor() as cursor:
            row = cursor.execute(
                ledger._sql(
                    "SELECT result FROM handoff_node_runs WHERE thread_id = ? "
                    "AND result IS NOT NULL ORDER BY seq DESC LIMIT 1"
                ),
                (thread_id,),
            ).fetchone()
    assert row is not None
    return str(row[0])


# -- the cipher and its keys -------------------------------------------------------------


def test_a_key_that_is_not_base64_of_32_bytes_says_the_form_expected() -> None:
    for bad in ("abc", base64.b64encode(b"x" * 16).decode(), "not base64 at all!"):
        with pytest.raises(EncryptionKeyError) as raised:
            parse_keys(bad)
        assert "HANDOFF_ENCRYPTION_KEY" in raised.value.message
        assert "base64 of 32 random bytes" in raised.value.message
    with pytest.raises(EncryptionKeyError, match="HANDOFF_ENCRYPTION_OLD_KEYS"):
        parse_keys(new_key(), f"{new_key()},short")
    with pytest.raises(EncryptionKeyError, match="HANDOFF_ENCRYPTION_KEY is not"):
        parse_keys(None, new_key())
    assert parse_keys(None) is None and parse_keys("  ") is None


def test_a_rotated_ring_opens_what_the_old_key_sealed_and_seals_under_the_new() -> None:
    old, new = new_key(), new_key()
    before = parse_keys(old)
    after = parse_keys(new, f" {old} ")
    assert before is not None and after is not None
    sealed = before.seal(b"a sentence of a source")
    assert after.unseal(sealed) == b"a sentence of a source"
    assert after.seal(b"x")[:8].hex() == key_id(base64.b64decode(new))
    assert after.ids == {key_id(base64.b64decode(old)), key_id(base64.b64decode(new))}
    with pytest.raises(EncryptionKeyError):
        parse_keys(new_key()).unseal(sealed)  # type: ignore[union-attr]
    changed = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(InvalidTag):
        after.unseal(changed)
    assert old not in repr(after) and new not in repr(after)


def test_plain_bytes_that_begin_like_a_sealed_blob_are_read_as_they_are() -> None:
    keys = parse_keys(new_key())
    for plain in (MAGIC, MAGIC + b"\x00" * 40, b""):
        assert open_blob(keys, plain) == plain and open_blob(None, plain) == plain
        assert open_blob(keys, seal_blob(keys, plain)) == plain


def test_the_checkpoint_serializer_is_langgraphs_encrypted_one_and_reads_plain_values() -> None:
    keys = parse_keys(new_key())
    assert keys is not None
    serde = contract_serializer(keys)
    kind, data = serde.dumps_typed({"draft": "Champollion was born in Figeac"})
    assert kind.endswith("+aesgcm") and SOURCE_SENTENCE not in data
    assert serde.loads_typed((kind, data)) == {"draft": "Champollion was born in Figeac"}
    plain = contract_serializer().dumps_typed({"old": 1})
    assert serde.loads_typed(plain) == {"old": 1}, "values stored before the key stay readable"
    with pytest.raises(IntegrityError):
        AesGcmCipher(keys).decrypt("aesgcm", data[:-1] + bytes([data[-1] ^ 1]))


# -- a run on each backend ---------------------------------------------------------------


def test_without_the_key_nothing_of_an_article_or_a_source_is_readable(base: Settings) -> None:
    plain = base.with_overrides(data_dir=base.data_dir.parent / "plain-data")
    plain = plain.with_overrides(artifact_dir=plain.data_dir / "artifacts")
    if plain.resolved_database_url().startswith("sqlite"):
        plain = plain.with_overrides(database_url=f"sqlite:///{plain.data_dir / 'handoff.db'}")
        with Workflow(plain) as workflow:
            assert workflow.run(OBJECTIVE, thread_id="t-plain").result_status == "completed"
        assert SOURCE_SENTENCE in stored_bytes(plain), "the search finds text stored plainly"

    settings = keyed(base, new_key())
    with Workflow(settings) as workflow:
        outcome = workflow.run(OBJECTIVE, thread_id="t-sealed")
        assert outcome.result_status == "completed", outcome
        article = workflow.artifact("t-sealed", "article")
        [champollion] = [
            entry for entry in workflow.sources("t-sealed") if entry.file_name == "champollion.md"
        ]
        source = workflow.source_text("t-sealed", champollion.id)
        status = workflow.status("t-sealed")  # read without building the whole state
        assert status.fact_count == len(workflow.state("t-sealed")["research"].facts) > 0
    assert b"Rosetta" in article and SOURCE_SENTENCE.decode() in source, "read with the key"
    raw = stored_bytes(settings)
    assert [needle for needle in NEEDLES if needle in raw] == []
    assert article[:40] not in raw and source.encode()[:40] not in raw

    with Workflow(settings) as workflow:  # provenance: each ref is the plain bytes' hash
        ref = workflow.artifact_ref("t-sealed", "article")
        assert workflow.backend.store.verify(ref) == "fresh"
    assert stored_blob(settings, ref).startswith(MAGIC)
    assert latest_result(settings, "t-sealed").startswith(TEXT_PREFIX)


def test_a_changed_sealed_blob_is_reported_as_tampered(base: Settings) -> None:
    settings = keyed(base, new_key())
    with Workflow(settings) as workflow:
        assert workflow.run(OBJECTIVE, thread_id="t-tamper").result_status == "completed"
        ref = workflow.artifact_ref("t-tamper", "article")
        tamper(workflow.backend.store, ref)
        assert workflow.backend.store.verify(ref) == "tampered"
        with pytest.raises(IntegrityError, match="was modified"):
            workflow.artifact("t-tamper", "article")


def test_rotation_reads_the_old_key_and_writes_under_the_new(base: Settings) -> None:
    old, new = new_key(), new_key()
    with Workflow(keyed(base, old)) as workflow:
        assert workflow.run(OBJECTIVE, thread_id="t-rot").result_status == "completed"
        first = workflow.artifact("t-rot", "article")
        first_ref = workflow.artifact_ref("t-rot", "article")
    rotated = keyed(base, new, old)
    with Workflow(rotated) as workflow:
        assert workflow.artifact("t-rot", "article") == first, "old-key data read"
        revised = workflow.revise("t-rot", {"reason": "shorter", "max_words": 150})
        assert revised.result_status == "completed", revised
        second_ref = workflow.artifact_ref("t-rot", "article")
        assert second_ref.revision == first_ref.revision + 1
        assert any(run.reused for run in workflow.history("t-rot")), "ledger payloads read"
        assert workflow.artifact("t-rot", "article") != first

    old_id, new_id = (key_id(base64.b64decode(key)) for key in (old, new))
    assert stored_blob(rotated, first_ref)[len(MAGIC) :][:8].hex() == old_id
    assert stored_blob(rotated, second_ref)[len(MAGIC) :][:8].hex() == new_id
    sealed = latest_result(rotated, "t-rot").removeprefix(TEXT_PREFIX)
    assert base64.b64decode(sealed)[:8].hex() == new_id, "new ledger payloads: new key"
    kind = backend_for(rotated.resolved_database_url())
    assert kind.recorded_keys(rotated) == {old_id, new_id}
    assert [needle for needle in NEEDLES if needle in stored_bytes(rotated)] == []

    with pytest.raises(EncryptionKeyError, match=old_id):  # the old key dropped too soon
        kind.check_keys(keyed(base, new))


def test_a_database_written_with_a_key_opens_in_python_only_with_it(base: Settings) -> None:
    key = new_key()
    with Workflow(keyed(base, key)) as workflow:
        assert workflow.run(OBJECTIVE, thread_id="t-py").result_status == "completed"
    before = snapshot(base)
    for wrong in (base, keyed(base, new_key()), keyed(base, new_key(), new_key())):
        with pytest.raises(EncryptionKeyError, match="HANDOFF_ENCRYPTION_KEY"):
            with open_backend(wrong):
                pass
    assert snapshot(base) == before, "nothing was changed"
    assert key_ring(keyed(base, key)) is not None


# -- the command line --------------------------------------------------------------------


@pytest.mark.e2e
def test_a_missing_or_wrong_key_is_one_line_exit_2_and_nothing_changed(base: Settings) -> None:
    key = new_key()
    ran = handoff("run", OBJECTIVE, "--thread", "t-cli", env=env_with(base, encryption_key=key))
    assert ran.returncode == ExitCode.COMPLETED, ran.stderr
    before = snapshot(base)
    attempts = {
        "missing": env_with(base),
        "wrong": env_with(base, encryption_key=new_key()),
        "malformed": env_with(base, encryption_key="not-a-key"),
    }
    for name, env in attempts.items():
        for args in (("status", "t-cli"), ("show", "t-cli"), ("run", OBJECTIVE, "--thread", "n")):
            result = handoff(*args, env=env)
            assert result.returncode == ExitCode.USAGE, (name, args, result.stderr)
            line = one_line_error(result)
            assert "HANDOFF_ENCRYPTION_KEY" in line, line
            assert result.stdout == "", (name, args)
    assert snapshot(base) == before, "nothing was read into or written to the stores"

    shown = handoff("show", "t-cli", env=env_with(base, encryption_key=key))
    assert shown.returncode == ExitCode.COMPLETED, shown.stderr
    assert shown.stdout.startswith("# Explain how the Rosetta Stone")


@pytest.mark.e2e
def test_a_killed_run_resumes_with_the_key(base: Settings) -> None:
    key = new_key()
    env = env_with(base, encryption_key=key)
    killed = handoff(
        "run", OBJECTIVE, "--thread", "t-kill", env={**env, "HANDOFF_FAULT": "kill:writer:start"}
    )
    assert killed.returncode not in (ExitCode.COMPLETED, ExitCode.USAGE), killed.stderr
    refused = handoff("resume", "t-kill", env=env_with(base))
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    resumed = handoff("resume", "t-kill", env=env)
    assert resumed.returncode == ExitCode.COMPLETED, resumed.stderr
    with Workflow(keyed(base, key)) as workflow:
        assert workflow.outcome("t-kill").result_status == "completed"
        assert b"Rosetta" in workflow.artifact("t-kill", "article")
    assert [needle for needle in NEEDLES if needle in stored_bytes(base)] == []


def test_the_dev_servers_saver_checks_and_uses_the_key(
    base: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``langgraph dev`` opens its saver from the environment: the same key, the same refusal."""
    import asyncio

    from app.server.checkpointer import checkpointer

    key = new_key()
    with Workflow(keyed(base, key)) as workflow:
        assert workflow.run(OBJECTIVE, thread_id="t-dev").result_status == "completed"
    for name, value in backend_env(base).items():
        if name.startswith("HANDOFF_"):
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("HANDOFF_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("HANDOFF_ENCRYPTION_OLD_KEYS", raising=False)

    async def latest() -> Any:
        async with checkpointer() as saver:
            return await saver.aget_tuple(Workflow.config("t-dev"))

    with pytest.raises(EncryptionKeyError, match="HANDOFF_ENCRYPTION_KEY is not set"):
        asyncio.run(latest())
    monkeypatch.setenv("HANDOFF_ENCRYPTION_KEY", key)
    found = asyncio.run(latest())
    assert found is not None and found.checkpoint["channel_values"]["task"].objective == OBJECTIVE
