"""Test backends: an SQLite file per test, or a PostgreSQL schema per test, removed after.

PostgreSQL tests use ``HANDOFF_TEST_POSTGRES_URL`` (default: the local server's ``test``
database). When it is unreachable they are skipped with a loud reason, unless
``HANDOFF_REQUIRE_POSTGRES=1`` (set by ``.ci/run``), which turns the skip into a failure.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from app.settings import BUNDLED_CORPUS, Settings
from app.storage.backends import backend_for
from app.storage.backends.base import UnsupportedDatabaseUrl
from bench._postgres import fresh_schema

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
BACKENDS = ["sqlite", "postgres"]


def postgres_url() -> str:
    """The server the PostgreSQL tests use."""
    return os.environ.get("HANDOFF_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL


def postgres_required() -> bool:
    """True when an unreachable server must fail the tests instead of skipping them."""
    return os.environ.get("HANDOFF_REQUIRE_POSTGRES", "").strip() in ("1", "true", "yes")


@functools.cache
def postgres_problem() -> str | None:
    """Why the test server cannot be used, or None when it can."""
    try:
        with psycopg.connect(postgres_url(), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as error:  # any failure to reach it is reported, not raised
        return " ".join(str(error).split()) or type(error).__name__
    return None


def require_postgres() -> str:
    """The server URL; skip (loudly) or fail when it is unreachable."""
    problem = postgres_problem()
    if problem is None:
        return postgres_url()
    if postgres_required():
        pytest.fail(
            f"HANDOFF_REQUIRE_POSTGRES=1 but PostgreSQL at {postgres_url()} is unreachable: "
            f"{problem}",
            pytrace=False,
        )
    pytest.skip(
        f"POSTGRESQL UNREACHABLE at {postgres_url()} ({problem}): PostgreSQL tests SKIPPED. "
        "Start a server or set HANDOFF_TEST_POSTGRES_URL; HANDOFF_REQUIRE_POSTGRES=1 fails "
        "instead of skipping"
    )


def admin() -> psycopg.Connection[tuple[object, ...]]:
    """A plain autocommit connection to the test server (for setup and inspection)."""
    return psycopg.connect(require_postgres(), autocommit=True, connect_timeout=5)


@contextmanager
def postgres_schema(prefix: str = "handoff_t") -> Iterator[str]:
    """A fresh schema on the test server for one test: a URL that uses it, dropped after.

    The benchmarks make theirs the same way (``bench._postgres.fresh_schema``).
    """
    with fresh_schema(require_postgres(), prefix=prefix) as url:
        yield url


def served(settings: Settings) -> Settings:
    """``settings`` with the artifact store the environment names, where the database allows it.

    The tests take ``HANDOFF_ARTIFACT_STORE`` as every program does, so a swapped store runs
    under the whole suite. A store the database refuses beside it (``memory`` beside a file
    that outlives the process, ``database`` beside SQLite) leaves those tests on the
    database's own store ('auto'); the tests on ``memory://`` take it.
    """
    try:
        backend_for(settings.resolved_database_url()).check(settings)
    except UnsupportedDatabaseUrl:
        return settings.with_overrides(artifact_store="auto")
    return settings


def sqlite_settings(data: Path) -> Settings:
    """Settings for an SQLite file and an artifact folder under ``data``.

    The folder holding ``data`` (the test's own) is a corpus root, so tests may research
    corpora they write there. The artifact store is the environment's (see ``served``).
    """
    return served(
        Settings(
            data_dir=data,
            database_url=f"sqlite:///{data / 'handoff.db'}",
            artifact_dir=data / "artifacts",
            corpus=[BUNDLED_CORPUS],
            corpus_roots=[data.parent],
        )
    )


@contextmanager
def backend_settings(kind: str, data: Path) -> Iterator[Settings]:
    """Settings for one test on ``kind`` ('sqlite' or 'postgres'), cleaned up after."""
    if kind == "sqlite":
        yield sqlite_settings(data)
    elif kind == "postgres":
        with postgres_schema() as url:
            yield served(sqlite_settings(data).with_overrides(database_url=url))
    else:
        raise ValueError(f"unknown test backend {kind!r}")


def backend_env(settings: Settings) -> dict[str, str]:
    """Environment for a ``handoff`` subprocess that must use the same backend."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HANDOFF_")}
    env["HANDOFF_DATA_DIR"] = str(settings.data_dir)
    env["HANDOFF_DATABASE_URL"] = settings.resolved_database_url()
    env["HANDOFF_ARTIFACT_DIR"] = str(settings.resolved_artifact_dir())
    env["HANDOFF_ARTIFACT_STORE"] = settings.artifact_store
    return env
