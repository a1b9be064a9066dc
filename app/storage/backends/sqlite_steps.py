"""SQL statements as generators, so one saver's logic runs on two drivers.

The SQLite saver is used synchronously by the CLI (``sqlite3``) and asynchronously by the
dev server (``aiosqlite``), and both must store the same rows. Its statements are written
once, as generators (:data:`Steps`) that yield each statement and are sent back the rows it
fetched; :func:`run` drives them on ``sqlite3``, and
:func:`app.storage.backends.sqlite_saver_aio.arun` on ``aiosqlite``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

T = TypeVar("T")
Rows = list[tuple[Any, ...]]
KEYS_PER_QUERY = 100
"""Keys per query: at most 400 parameters, under SQLite's oldest limit (999)."""


@dataclass(frozen=True)
class Sql:
    """One statement for a driver to run; ``many``: ``params`` is a list of rows."""

    text: str
    params: Sequence[Any] = ()
    many: bool = False


Steps = Generator[Sql, Rows, T]
"""Statements to run in order; each is sent back the rows it fetched (none for ``many``)."""


def run(cursor: sqlite3.Cursor, steps: Steps[T]) -> T:
    """Run the statements on ``cursor``; returns what the steps return."""
    try:
        statement = next(steps)
        while True:
            if statement.many:
                cursor.executemany(statement.text, statement.params)
                rows: Rows = []
            else:
                rows = cursor.execute(statement.text, statement.params).fetchall()
            statement = steps.send(rows)
    except StopIteration as done:
        return cast(T, done.value)
