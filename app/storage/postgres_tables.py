"""Tables of the project's own (audit, artifacts) in the checkpoints' PostgreSQL schema.

Each component names its ``CREATE TABLE IF NOT EXISTS`` script; the tables are made on
first use, under the schema lock (``app.storage.postgres.schema_lock``), on a shared pool
or on a pool of the component's own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from app.storage.postgres import DEFAULT_TIMEOUT, open_pool, schema_lock

if TYPE_CHECKING:
    from app.storage.postgres import PgConnection


def execute_script(conn: PgConnection, script: str) -> None:
    """Run ``;``-separated DDL one statement at a time (every statement is prepared)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


class SchemaPool:
    """Connections to one schema whose tables are created on first use.

    Uses a shared pool when given one (its owner created the tables and closes it), or
    opens a pool of its own from a URL on first use; ``close()`` releases only that one.
    """

    def __init__(
        self,
        schema_sql: str,
        url: str | None = None,
        *,
        pool: Any | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        owner: str = "this store",
    ) -> None:
        if (url is None) == (pool is None):
            raise ValueError(f"give {owner} either a url or a pool")
        self.schema_sql = schema_sql
        self.url = url
        self.timeout = timeout
        self._pool = pool
        self._owned: Any | None = None
        self._ready = pool is not None
        self._lock = threading.Lock()

    @contextmanager
    def connection(self) -> Iterator[PgConnection]:
        """A pooled connection; the first one (on an own pool) creates the tables."""
        with self._lock:
            if self._pool is None:
                assert self.url is not None
                self._owned = open_pool(self.url, self.timeout, max_size=2)
                self._pool = self._owned.__enter__()
            if not self._ready:
                with self._pool.connection() as conn, schema_lock(conn):
                    execute_script(conn, self.schema_sql)
                self._ready = True
        with self._pool.connection() as conn:
            yield conn

    def setup(self) -> None:
        """Create the tables if they do not exist (idempotent, safe across processes)."""
        with self.connection() as conn, schema_lock(conn):
            execute_script(conn, self.schema_sql)

    def close(self) -> None:
        """Close the pool opened here (a shared pool belongs to its owner)."""
        with self._lock:
            if self._owned is not None:
                self._owned.__exit__(None, None, None)
                self._owned = None
                self._pool = None
                self._ready = False


class PostgresTables:
    """Base of a component whose tables live in the checkpoints' schema (audit, artifacts).

    Give it the Workflow's pool (``pool=``) to share connections, or a ``url`` to have it
    open a pool of its own on first use; ``close()`` releases only that one.
    """

    schema_sql: ClassVar[str]
    """The ``CREATE TABLE IF NOT EXISTS`` script of the component's tables."""

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: Any | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._db = SchemaPool(
            self.schema_sql, url, pool=pool, timeout=timeout, owner=type(self).__name__
        )

    def setup(self) -> None:
        """Create the tables if they do not exist (idempotent, safe across processes)."""
        self._db.setup()

    def close(self) -> None:
        """Close the pool opened here (a shared pool belongs to its owner)."""
        self._db.close()
