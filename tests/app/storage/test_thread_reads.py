"""The pieces app.storage.thread_reads relies on: reading a list's length from stored bytes, and
leaving channels out of LangGraph's PostgreSQL query."""

from __future__ import annotations

from datetime import UTC, datetime

import ormsgpack
import pytest
from langgraph.checkpoint.postgres import PostgresSaver

from app.storage.serde import contract_serializer
from app.storage.thread_reads import _count_field, _leave_out, _list_length, _Packed, _shallow
from contracts import Question, ResearchBundle


def _stored(value: object) -> object:
    """``value`` as a checkpoint stores it, read back shallowly (models left encoded)."""
    kind, blob = contract_serializer().dumps_typed({"value": value})
    assert kind == "msgpack"
    return _shallow(blob)["value"]


@pytest.mark.parametrize("count", [0, 1, 15, 16, 70_000])
def test_the_length_of_a_list_field_is_read_from_its_header(count: int) -> None:
    payload = ormsgpack.packb(
        (
            "contracts.research",
            "Whatever",
            {
                "before": {"nested": [1, 2.5, None, True, b"x" * 300, "s" * 70_000]},
                "when": datetime(2026, 1, 1, tzinfo=UTC),
                "items": list(range(count)),
                "after": ["y"],
            },
            "model_validate_json",
        ),
        option=ormsgpack.OPT_NON_STR_KEYS | ormsgpack.OPT_PASSTHROUGH_DATETIME,
        default=lambda value: ormsgpack.Ext(9, b"opaque-date"),
    )
    assert _list_length(payload, "items") == count
    assert _list_length(payload, "after") == 1
    assert _list_length(payload, "before") is None, "a map is no list"
    assert _list_length(payload, "absent") is None
    assert _list_length(ormsgpack.packb({"items": []}), "items") is None, "not a stored model"


def test_facts_are_counted_in_a_stored_bundle_as_the_model_has_them() -> None:
    bundle = ResearchBundle.model_validate(
        {
            "task_id": "task-1",
            "result_status": "partial",
            "open_questions": [Question(id="q-1", text="Why?"), Question(id="q-2", text="How?")],
        }
    )
    stored = _stored(bundle)
    assert isinstance(stored, _Packed)
    assert _count_field(stored, "facts") == 0
    assert _count_field(stored, "open_questions") == 2
    assert _count_field(bundle, "open_questions") == 2, "a decoded model counts the same"
    assert _count_field({"facts": [1, 2, 3]}, "facts") == 3, "and a plain dict"
    assert _count_field(None, "facts") is None


def test_channels_are_left_out_of_the_postgres_query_or_it_fails_loudly() -> None:
    query = _leave_out(PostgresSaver.SELECT_SQL, frozenset({"research", "handoff"}))
    assert query.count("not in ('handoff', 'research')") == 2
    assert _leave_out(PostgresSaver.SELECT_SQL, frozenset()) == PostgresSaver.SELECT_SQL
    with pytest.raises(RuntimeError, match="no longer has"):
        _leave_out("select checkpoint from checkpoints", frozenset({"research"}))
