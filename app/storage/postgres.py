"""PostgreSQL connections for every part of the backend: one set of options, bounded waits.

Every connection the project opens (the pool shared by checkpoints, audit and artifacts,
and the dedicated connection that holds a thread's lock) is made here, so they all get

* what LangGraph's PostgresSaver needs: ``autocommit=True``, ``prepare_threshold=0``,
  ``row_factory=dict_row``;
* bounded waits, so a server that restarts or vanishes fails a run within a known time
  instead of hanging it: ``connect_timeout``, TCP keepalives and ``tcp_user_timeout``
  (a dead peer is noticed even mid-query), and the pool's wait ``timeout``;
* ``application_name=handoff-<pid>``, so an operator (or a test) can see and end the
  sessions of one worker process in ``pg_stat_activity``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus, urlsplit

from app.errors import DatabaseMissing

if TYPE_CHECKING:  # psycopg is imported on first use, so SQLite-only processes start faster
    import psycopg
    from psycopg.rows import DictRow

    PgConnection = psycopg.Connection[DictRow]

DEFAULT_TIMEOUT = 10.0
"""Seconds a run may wait for the database before it fails (connect, pool, dead peer)."""
SCHEMA_LOCK_WAIT = 120.0
"""Seconds to wait for another process that is creating the tables."""

# The pool logs every failed reconnection attempt; the error that ends the run says it once.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


def is_postgres_url(url: str) -> bool:
    """True for ``postgresql://`` and ``postgres://`` URLs."""
    return urlsplit(url).scheme in ("postgresql", "postgres")


_SECRET = re.compile(
    r"""(?P<key>\b(?:ssl)?password\s*=\s*)(?!\*\*\*)(?P<value>'(?:[^'\\]|\\.)*'|[^\s&'"]*)""",
    re.IGNORECASE,
)
"""A ``password=`` or ``sslpassword=`` value: in a URL's query string (up to the next ``&``)
or in a key=value conninfo string (quoted, or up to the next space)."""
_USERINFO = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s/]*@", re.IGNORECASE)
"""The password of ``scheme://user:password@host``."""
MASK = "***"


def secrets_of(url: str) -> set[str]:
    """The passwords a database URL (or conninfo string) carries, as given and decoded."""
    found = {match["value"].strip("'") for match in _SECRET.finditer(url)}
    with contextlib.suppress(ValueError):
        password = urlsplit(url).password
        if password:
            found.add(password)
    found |= {unquote_plus(value) for value in found}
    return {value for value in found if value}


def redact(text: str, url: str | None = None) -> str:
    """``text`` with every password it may carry masked, for messages, logs and tracebacks.

    Masks ``password=``/``sslpassword=`` values (URL query or conninfo), the password of a
    URL's ``user:password@``, and, given the ``url`` in force, any literal occurrence of its
    passwords (a driver's error text may quote the connection string it was given).
    """
    text = _SECRET.sub(lambda match: f"{match['key']}{MASK}", text)
    text = _USERINFO.sub(rf"\g<head>{MASK}@", text)
    for secret in sorted(secrets_of(url or ""), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def describe_url(url: str) -> str:
    """The URL (or conninfo string) with every password masked, for messages and logs."""
    return redact(url, url)


def application_name() -> str:
    """How this process's sessions are named in ``pg_stat_activity``."""
    return f"handoff-{os.getpid()}"


def connection_kwargs(timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Connection options: what LangGraph requires, plus bounded waits."""
    from psycopg.rows import dict_row

    seconds = max(2, math.ceil(timeout))
    return {
        "autocommit": True,
        "prepare_threshold": 0,
        "row_factory": dict_row,
        "connect_timeout": seconds,
        "keepalives": 1,
        "keepalives_idle": max(1, seconds // 2),
        "keepalives_interval": 1,
        "keepalives_count": 3,
        "tcp_user_timeout": int(seconds * 1000),
        "application_name": application_name(),
    }


def connect(url: str, timeout: float = DEFAULT_TIMEOUT) -> PgConnection:
    """A dedicated connection (for a thread lock, or administration).

    Every backend connects here first (``open_pool`` too), so a database or a role that
    does not exist is reported once, as DatabaseMissing, instead of as an outage.
    """
    import psycopg

    try:
        return psycopg.connect(url, **connection_kwargs(timeout))
    except psycopg.OperationalError as error:
        name = missing_database(error)
        if name is not None:
            raise DatabaseMissing(
                f"HANDOFF_DATABASE_URL names database {name!r}, which does not exist on the "
                f"server at {describe_url(url)}; create it with `createdb {shlex.quote(name)}`, "
                "or name an existing database"
            ) from error
        role = missing_role(error)
        if role is not None:
            raise DatabaseMissing(
                f"HANDOFF_DATABASE_URL names role {role!r}, which does not exist on the "
                f"server at {describe_url(url)}; create it with `createuser {shlex.quote(role)}`, "
                "or name an existing role"
            ) from error
        raise


_NO_DATABASE = re.compile(r'\bFATAL:\s+database "(?P<name>[^"]*)" does not exist')
"""The server's refusal of a connection to a database it does not have (SQLSTATE 3D000)."""
_NO_ROLE = re.compile(r'\bFATAL:\s+role "(?P<name>[^"]*)" does not exist')
"""The server's refusal of a connection as a role it does not have (SQLSTATE 28000)."""


def missing_database(error: BaseException) -> str | None:
    """The name of the database a failed connection found missing; None for any other failure.

    libpq reports a refused connection without its SQLSTATE, so the server's message is
    read, and it must name the very database the connection asked for: a server that is
    down, refuses the role or the password, or times out is never taken for this.
    """
    if getattr(error, "sqlstate", None) == "3D000":
        match = _NO_DATABASE.search(str(error))
        return match["name"] if match else _requested(error, "db")
    return _refused_as_missing(error, _NO_DATABASE, "db")


def missing_role(error: BaseException) -> str | None:
    """The name of the role a failed connection found missing; None for any other failure.

    Read from the server's message as :func:`missing_database` is, and it must name the
    role the connection asked for. A server that checks passwords says only that the
    password failed, whether the role exists or not: that is not taken for this.
    """
    return _refused_as_missing(error, _NO_ROLE, "user")


def _refused_as_missing(error: BaseException, refusal: re.Pattern[str], field: str) -> str | None:
    """The name a refusal says does not exist, when it is what the connection asked for."""
    match = refusal.search(str(error))
    if match is None:
        return None
    requested = _requested(error, field)
    return match["name"] if requested in (None, match["name"]) else None


def _requested(error: BaseException, field: str) -> str | None:
    """What the failed connection asked for (``db``, ``user``), when psycopg kept it."""
    value = getattr(getattr(error, "pgconn", None), field, None)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) and value else None


@contextmanager
def open_pool(url: str, timeout: float = DEFAULT_TIMEOUT, max_size: int = 4) -> Iterator[Any]:
    """A connection pool that checks each connection before lending it, closed on exit.

    The check (one round trip) replaces connections a server restart has killed, so a
    worker that outlives a restart carries on; ``timeout`` bounds every wait for a
    connection, so a server that stays down fails the caller with ``PoolTimeout``. The
    pool's background reconnection (exponential backoff) also gives up after ``timeout``,
    so once the server is back the next request connects at once instead of waiting for
    a retry scheduled minutes ahead.

    One direct connection is made first: the pool retries a refused connection with
    backoff until ``timeout`` has passed, so a server that is not there at all (a closed
    port, an unknown host) would take the whole timeout to report. The direct attempt
    fails at once with the server's own reason; a server that does not answer still gets
    ``timeout`` (its ``connect_timeout``).
    """
    import psycopg
    from psycopg_pool import ConnectionPool

    connect(url, timeout).close()

    pool: ConnectionPool[PgConnection] = ConnectionPool(
        url,
        kwargs=connection_kwargs(timeout),
        min_size=1,
        max_size=max_size,
        timeout=timeout,
        reconnect_timeout=timeout,
        check=ConnectionPool.check_connection,
        name=f"handoff-{os.getpid()}",
        open=False,
    )
    try:
        try:
            pool.open(wait=True, timeout=timeout)
        except psycopg.OperationalError:
            connect(url, timeout).close()  # raises the server's own reason, if it has one
            raise
        yield pool
    finally:
        pool.close()


def advisory_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for a tuple of names (stable across processes)."""
    digest = hashlib.blake2b("\0".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def current_schema(conn: PgConnection) -> str:
    """The schema unqualified names resolve to (the first of search_path)."""
    row = conn.execute("SELECT current_schema() AS schema").fetchone()
    schema = row["schema"] if row else None
    if not schema:
        raise ValueError(
            "the database URL's search_path names no existing schema: create the schema "
            "first (CREATE SCHEMA …), or drop options=-csearch_path from the URL"
        )
    return str(schema)


@contextmanager
def schema_lock(conn: PgConnection) -> Iterator[None]:
    """Serialise schema creation across processes.

    Concurrent ``CREATE TABLE IF NOT EXISTS`` statements, and LangGraph's migrations,
    collide with each other on a fresh schema otherwise. The lock is polled with
    ``pg_try_advisory_lock`` rather than waited for: LangGraph's migrations run
    ``CREATE INDEX CONCURRENTLY``, which waits for every open transaction to end, and a
    waiter blocked inside ``pg_advisory_lock`` is one, so the two would deadlock.
    """
    key = advisory_key("handoff-schema", current_schema(conn))
    deadline = time.monotonic() + SCHEMA_LOCK_WAIT
    while True:
        row = conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (key,)).fetchone()
        if row and row["got"]:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"another process has been creating the database tables for over "
                f"{SCHEMA_LOCK_WAIT:.0f}s; if none is, end the session that holds advisory "
                f"lock {key}"
            )
        time.sleep(0.05)
    try:
        yield
    finally:
        if not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def is_outage(error: BaseException) -> bool:
    """An error that means the database is unreachable or the session was lost.

    ``psycopg.OperationalError`` covers refused or dropped connections, a server shutting
    down (``AdminShutdown``), a terminated session and the pool's ``PoolTimeout``.
    """
    psycopg = sys.modules.get("psycopg")  # not imported: cannot be a psycopg error
    return psycopg is not None and isinstance(error, psycopg.OperationalError)
