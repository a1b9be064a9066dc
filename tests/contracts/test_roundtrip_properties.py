"""Properties of every top-level contract over generated data: JSON round trips are lossless,
and no input, however malformed, escapes as anything but a ``ValidationError``."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from contracts import Budget, NodeRun, TaskSpec, VersionedContract, registered
from contracts.registry import SCHEMA_DIR
from tests.contracts.examples import EXAMPLES, contract_id
from tests.contracts.strategies import STRATEGIES, json_values

CONTRACTS = registered()
contracts = pytest.mark.parametrize("model", CONTRACTS, ids=contract_id)


twenty_examples = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def properties(test: Callable[..., None]) -> Callable[..., None]:
    """``test`` as a property: 20 examples, each drawing what it needs from ``data``."""
    return twenty_examples(given(data=st.data())(test))


# Wrong-typed JSON values by the JSON type a field expects. pydantic's lax mode coerces
# some pairs ("5" -> int, 1 -> datetime, true -> int), so each list avoids those.
CONTAINERS = st.lists(json_values(), max_size=3) | st.dictionaries(
    st.text(max_size=5), json_values(), max_size=3
)
NOT_A_LIST = st.text() | st.integers() | st.booleans() | st.dictionaries(st.text(), st.none())
NOT_AN_OBJECT = st.text() | st.integers() | st.booleans() | st.lists(json_values(), max_size=3)


def json_types(schema: dict[str, Any], prop: dict[str, Any]) -> set[str]:
    """The non-null JSON types a property accepts, following ``$ref`` and ``anyOf``."""
    if "$ref" in prop:
        return json_types(schema, schema["$defs"][prop["$ref"].removeprefix("#/$defs/")])
    if "anyOf" in prop:
        return set().union(*(json_types(schema, branch) for branch in prop["anyOf"]))
    declared: str = prop["type"]
    return {declared} - {"null"}


@cache
def wrong_values(model: type[VersionedContract], field: str) -> st.SearchStrategy[Any]:
    schema = model.model_json_schema()
    types = json_types(schema, schema["properties"][field])
    if types == {"array"}:
        return NOT_A_LIST
    if types == {"object"}:
        return NOT_AN_OBJECT
    assert types <= {"string", "integer", "number", "boolean"}, (field, types)
    return CONTAINERS


@contracts
@properties
def test_round_trips_through_json_and_through_plain_json_data_return_an_equal_model(
    model: type[VersionedContract], data: st.DataObject
) -> None:
    instance = data.draw(STRATEGIES[model])
    restored = model.model_validate_json(instance.model_dump_json())
    assert restored == instance
    assert restored.model_dump_json() == instance.model_dump_json()
    assert model.model_validate(json.loads(instance.model_dump_json())) == instance


@contracts
@properties
def test_generated_valid_model_validates_against_its_committed_json_schema(
    model: type[VersionedContract], data: st.DataObject
) -> None:
    schema = json.loads((SCHEMA_DIR / f"{model.__name__}.json").read_text(encoding="utf-8"))
    instance = data.draw(STRATEGIES[model]).model_dump(mode="json")
    errors = [error.message for error in Draft202012Validator(schema).iter_errors(instance)]
    assert errors == []


@contracts
@pytest.mark.parametrize(
    ("inputs", "validate"),
    [
        pytest.param(st.text(), lambda model, text: model.model_validate_json(text), id="text"),
        pytest.param(
            json_values(allow_non_finite=True),
            lambda model, value: model.model_validate(value),
            id="python-value",
        ),
        pytest.param(
            json_values(),
            lambda model, value: model.model_validate_json(json.dumps(value)),
            id="json-document",
        ),
    ],
)
@properties
def test_arbitrary_input_raises_only_validation_error(
    model: type[VersionedContract],
    inputs: st.SearchStrategy[Any],
    validate: Callable[[type[VersionedContract], Any], object],
    data: st.DataObject,
) -> None:
    value = data.draw(inputs)
    with suppress(ValidationError):
        validate(model, value)


@contracts
@properties
def test_valid_model_with_one_field_set_to_any_json_value_raises_only_validation_error(
    model: type[VersionedContract], data: st.DataObject
) -> None:
    payload = data.draw(STRATEGIES[model]).model_dump(mode="json")
    field = data.draw(st.sampled_from(sorted(model.model_fields)))
    payload[field] = data.draw(json_values(), label=field)
    with suppress(ValidationError):
        model.model_validate_json(json.dumps(payload))
    with suppress(ValidationError):
        model.model_validate(payload)


FIELDS = [(model, field) for model in CONTRACTS for field in model.model_fields]


@pytest.mark.parametrize(
    ("model", "field"), FIELDS, ids=[f"{model.__name__}.{field}" for model, field in FIELDS]
)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_valid_model_json_with_one_field_of_the_wrong_type_is_refused_naming_that_field(
    model: type[VersionedContract], field: str, data: st.DataObject
) -> None:
    payload = data.draw(STRATEGIES[model]).model_dump(mode="json")
    payload[field] = data.draw(wrong_values(model, field), label=field)
    with pytest.raises(ValidationError) as caught:
        model.model_validate_json(json.dumps(payload))
    assert {error["loc"][0] for error in caught.value.errors()} == {field}


# Regressions: bugs these properties once found in the contracts.


def test_an_objective_too_short_after_stripping_is_refused_and_a_valid_one_round_trips() -> None:
    with pytest.raises(ValidationError, match="objective"):
        TaskSpec(task_id="t", objective="  ab  ")
    task = TaskSpec(task_id="t", objective="  abc  ")
    assert task.objective == "abc"
    assert TaskSpec.model_validate_json(task.model_dump_json()) == task


def test_infinite_duration_is_refused() -> None:
    with pytest.raises(ValidationError, match="duration_ms"):
        NodeRun.model_validate(EXAMPLES[NodeRun].model_copy(update={"duration_ms": float("inf")}))


def test_deadline_with_a_seconds_offset_round_trips_to_the_same_instant() -> None:
    deadline = datetime(2030, 1, 1, tzinfo=timezone(timedelta(minutes=17, seconds=30)))
    budget = Budget(deadline=deadline)
    restored = Budget.model_validate_json(budget.model_dump_json())
    assert restored.deadline is not None
    assert restored.deadline == deadline.astimezone(UTC)
