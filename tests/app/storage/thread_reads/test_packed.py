"""Stored msgpack read without building it: a list's length from its header, a model's count."""

from __future__ import annotations

from datetime import UTC, datetime

import ormsgpack
import pytest

from app.storage.serde import contract_serializer
from app.storage.thread_reads.packed import Packed, count_field, list_length, shallow
from contracts import Question, ResearchBundle


def _stored(value: object) -> object:
    """``value`` as a checkpoint stores it, read back shallowly (models left encoded)."""
    kind, blob = contract_serializer().dumps_typed({"value": value})
    assert kind == "msgpack"
    return shallow(blob)["value"]


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
    assert list_length(payload, "items") == count
    assert list_length(payload, "after") == 1
    assert list_length(payload, "before") is None, "a map is no list"
    assert list_length(payload, "absent") is None
    assert list_length(ormsgpack.packb({"items": []}), "items") is None, "not a stored model"


def test_facts_are_counted_in_a_stored_bundle_as_the_model_has_them() -> None:
    bundle = ResearchBundle.model_validate(
        {
            "task_id": "task-1",
            "result_status": "partial",
            "open_questions": [Question(id="q-1", text="Why?"), Question(id="q-2", text="How?")],
        }
    )
    stored = _stored(bundle)
    assert isinstance(stored, Packed)
    assert count_field(stored, "facts") == 0
    assert count_field(stored, "open_questions") == 2
    assert count_field(bundle, "open_questions") == 2, "a decoded model counts the same"
    assert count_field({"facts": [1, 2, 3]}, "facts") == 3, "and a plain dict"
    assert count_field(None, "facts") is None
