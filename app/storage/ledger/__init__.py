"""The audit log beside each thread, in the same database as its checkpoints.

It lives outside the checkpoint so that it can hold attempts that failed or were killed
(they never reach a checkpoint), so that checkpoints stay small however long a run is, and
so that a node re-run after a crash can reuse the result its finished attempt recorded.

One module per database, as LangGraph's checkpointers are: ``memory``, ``sqlite`` and
``postgres``; the SQL the last two share is in ``base``.
"""

from app.storage.ledger.memory import MemoryRunLedger
from app.storage.ledger.postgres import POSTGRES_SCHEMA, PostgresRunLedger
from app.storage.ledger.sqlite import SQLITE_SCHEMA, SqliteRunLedger

RunLedgerBackend = MemoryRunLedger | SqliteRunLedger | PostgresRunLedger

__all__ = [
    "POSTGRES_SCHEMA",
    "SQLITE_SCHEMA",
    "MemoryRunLedger",
    "PostgresRunLedger",
    "RunLedgerBackend",
    "SqliteRunLedger",
]
