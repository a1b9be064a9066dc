"""One factory, keyed by URL, for every checkpoint backend the project supports."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from app.serde import contract_serializer


class UnsupportedDatabaseUrl(ValueError):
    """A database URL with a scheme this project cannot open."""


def sqlite_path(url: str) -> Path:
    """The file behind a ``sqlite:///relative`` or ``sqlite:////absolute`` URL."""
    path = url.removeprefix("sqlite:///")
    if not path or path == url:
        raise UnsupportedDatabaseUrl(
            f"invalid SQLite URL {url!r}; expected sqlite:///relative/path.db or "
            "sqlite:////absolute/path.db"
        )
    return Path(path)


@contextmanager
def open_checkpointer(url: str) -> Iterator[BaseCheckpointSaver[str]]:
    """Open (and set up, idempotently) the saver for ``url``; close it on exit."""
    scheme = urlparse(url).scheme
    serde = contract_serializer()
    if scheme == "memory":
        yield InMemorySaver(serde=serde)
    elif scheme == "sqlite":
        path = sqlite_path(url)
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        try:
            saver = SqliteSaver(conn, serde=serde)
            saver.setup()
            yield saver
        finally:
            conn.close()
    elif scheme in ("postgresql", "postgres"):
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        with ConnectionPool(url, kwargs=kwargs, min_size=1, max_size=4, open=True) as pool:
            saver_pg = PostgresSaver(pool, serde=serde)  # type: ignore[arg-type]
            saver_pg.setup()
            yield saver_pg
    else:
        raise UnsupportedDatabaseUrl(
            f"unsupported database URL scheme {scheme!r} in {url!r}; expected "
            "sqlite:///path, postgresql://... or memory://"
        )
