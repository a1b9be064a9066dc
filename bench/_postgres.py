"""PostgreSQL for the benchmarks that need it (P5, P6): the server, and a schema per sample.

The server is the one named on the command line, else ``HANDOFF_BENCH_POSTGRES_URL``, else
``HANDOFF_TEST_POSTGRES_URL``, else the local ``test`` database.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg

from app.settings import BUNDLED_CORPUS, Settings

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_url(explicit: str | None = None) -> str:
    """The server the PostgreSQL benchmarks use (see the module doc)."""
    return (
        explicit
        or os.environ.get("HANDOFF_BENCH_POSTGRES_URL")
        or os.environ.get("HANDOFF_TEST_POSTGRES_URL")
        or DEFAULT_POSTGRES_URL
    )


def postgres_problem(url: str) -> str | None:
    """Why the server cannot be used, or None when it can."""
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as error:  # any failure to reach it is reported, not raised
        return " ".join(str(error).split()) or type(error).__name__
    return None


def with_search_path(url: str, schema: str) -> str:
    """``url`` whose sessions resolve unqualified names in ``schema``."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"


@contextmanager
def fresh_schema(url: str, *, prefix: str) -> Iterator[str]:
    """A new schema on the server; yields a URL that uses it, then drops it.

    Each sample gets a schema of its own, so no sample reads another's tables or queue.
    """
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_search_path(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute("SET lock_timeout = '20s'")
            # A process killed on an error must not block the drop with its session.
            conn.execute(
                "SELECT pg_terminate_backend(l.pid) FROM pg_locks l "
                "JOIN pg_class c ON c.oid = l.relation "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND l.pid <> pg_backend_pid()",
                (schema,),
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def schema_settings(url: str, root: Path) -> Settings:
    """Settings for a Workflow whose checkpoints, ledger and artifacts live in one schema."""
    return Settings(
        data_dir=root,
        database_url=url,
        artifact_store="database",
        corpus=[BUNDLED_CORPUS],
    )
