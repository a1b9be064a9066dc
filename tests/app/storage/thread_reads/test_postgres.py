"""Channels left out of LangGraph's PostgreSQL query, or a loud failure when it changes."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.postgres import PostgresSaver

from app.storage.thread_reads.postgres import leave_out


def test_channels_are_left_out_of_the_postgres_query_or_it_fails_loudly() -> None:
    query = leave_out(PostgresSaver.SELECT_SQL, frozenset({"research", "handoff"}))
    assert query.count("not in ('handoff', 'research')") == 2
    assert leave_out(PostgresSaver.SELECT_SQL, frozenset()) == PostgresSaver.SELECT_SQL
    with pytest.raises(RuntimeError, match="no longer has"):
        leave_out("select checkpoint from checkpoints", frozenset({"research"}))
