"""Every registered contract declares examples on itself, and they are sound: the check
names the contract whose example is missing, invalid, rewritten on reading, or lossy."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from enum import Enum
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import Field, field_serializer, model_validator

from contracts import VersionedContract, registered
from contracts.base import UtcDatetime
from contracts.registry import SCHEMA_DIR, json_schema
from tests.contracts.examples import EXAMPLES, contract_id, example_problems
from tests.contracts.strategies import STRATEGIES, instances

CONTRACTS = registered()
contracts = pytest.mark.parametrize("model", CONTRACTS, ids=contract_id)


@contracts
def test_every_registered_contract_declares_valid_examples(model: type[VersionedContract]) -> None:
    assert example_problems(model) == []
    assert model in EXAMPLES


@contracts
def test_the_committed_schema_carries_the_contracts_examples(
    model: type[VersionedContract],
) -> None:
    committed = json.loads((SCHEMA_DIR / f"{model.__name__}.json").read_text(encoding="utf-8"))
    assert committed["examples"] == list(model.EXAMPLES)


def test_editing_a_generated_schema_leaves_the_contracts_examples_alone() -> None:
    model = CONTRACTS[0]
    schema = model.model_json_schema()
    schema["examples"][0]["edited"] = True
    assert "edited" not in model.EXAMPLES[0]
    assert "edited" not in json_schema(model)["examples"][0]


def test_a_contract_without_an_example_fails_the_check_by_name() -> None:
    class Unexampled(VersionedContract):
        """A contract someone forgot to give an example."""

        note: str = Field(description="A note.")

    [problem] = example_problems(Unexampled)
    assert problem.startswith("Unexampled declares no example")
    assert "EXAMPLES" in problem


def test_an_example_that_does_not_validate_fails_the_check_naming_contract_and_field() -> None:
    class Counted(VersionedContract):
        """Counts cannot be negative."""

        count: int = Field(ge=0, description="How many.")

        EXAMPLES = [{"count": 3}, {"count": -1}]

    problems = example_problems(Counted)
    assert any(p.startswith("Counted.EXAMPLES[1] does not validate") for p in problems)
    assert any(
        p.startswith("Counted.EXAMPLES[1] breaks its JSON Schema at count") for p in problems
    )
    assert not any("EXAMPLES[0]" in p for p in problems)


def test_an_example_the_contract_rewrites_on_reading_fails_the_check() -> None:
    class Dated(VersionedContract):
        """Times are stored in UTC, so a +02:00 example is not what writers write."""

        at: UtcDatetime = Field(description="When.")

        EXAMPLES = [{"at": "2025-05-01T11:30:00+02:00"}]

    assert example_problems(Dated) == [
        "Dated.EXAMPLES[0] does not read back as written: fields ['at'] change"
    ]


def test_an_example_that_does_not_round_trip_fails_the_check() -> None:
    class Lossy(VersionedContract):
        """Writes its value decorated, so what it writes reads back as another value."""

        value: str = Field(description="A value.")

        EXAMPLES = [{"value": "plain"}]

        @field_serializer("value", when_used="json")
        def _decorated(self, value: str) -> str:
            return f"{value}!"

    problems = example_problems(Lossy)
    assert "Lossy.EXAMPLES[0] does not survive a JSON round trip" in problems
    assert "Lossy.EXAMPLES[0] does not survive a round trip through plain JSON data" in problems


# The strategies come from the contracts alone.


def _values(annotation: Any) -> float:
    """How many values a field can take (infinite for numbers, texts, lists and models)."""
    if annotation is bool:
        return 2
    if annotation is type(None):
        return 1
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return len(annotation)
    if get_origin(annotation) is Literal:
        return len(get_args(annotation))
    if get_origin(annotation) in (Union, UnionType):
        return sum(_values(arm) for arm in get_args(annotation))
    return math.inf


def _wanted(model: type[VersionedContract], name: str) -> float:
    """Distinct values 60 draws must show: 3, or all a small type has (schema_version: 1)."""
    if name == "schema_version":
        return 1
    return min(3, _values(model.model_fields[name].annotation))


@contracts
def test_drawn_instances_vary_every_field_that_can_vary(model: type[VersionedContract]) -> None:
    seen: dict[str, set[str]] = defaultdict(set)

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(instance=STRATEGIES[model])
    def draw(instance: VersionedContract) -> None:
        for name, value in instance.model_dump(mode="json").items():
            seen[name].add(json.dumps(value, sort_keys=True))

    draw()
    fixed = [name for name in model.model_fields if len(seen[name]) < _wanted(model, name)]
    assert fixed == [], (
        f"{model.__name__} fields {fixed} barely vary: a rule ties them (or their parts) to "
        f"other fields, so drawn values give way to the example's; state the rule in "
        f"RELATIONS (tests/contracts/strategies.py)"
    )


def test_a_contract_with_a_rule_of_its_own_still_draws_only_valid_varied_instances() -> None:
    class Window(VersionedContract):
        """A rule the strategies do not know: a window closes after it opens."""

        opens: int = Field(ge=0, le=23, description="Opening hour.")
        closes: int = Field(ge=0, le=23, description="Closing hour.")
        label: str = Field(max_length=40, description="What it is.")

        EXAMPLES = [{"opens": 9, "closes": 17, "label": "office"}]

        @model_validator(mode="after")
        def _closes_after_opening(self) -> Window:
            if self.closes <= self.opens:
                raise ValueError("a window closes after it opens")
            return self

    labels: set[str] = set()

    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(window=instances(Window))
    def draw(window: VersionedContract) -> None:
        assert isinstance(window, Window)
        assert window.closes > window.opens
        assert Window.model_validate_json(window.model_dump_json()) == window
        labels.add(window.label)

    draw()
    assert len(labels) > 1
    assert Window not in registered()
