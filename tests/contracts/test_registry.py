"""Contracts register themselves: a new module is exported, allowlisted and revived, unlisted."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from jsonschema import Draft202012Validator
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

import contracts
from contracts import ErrorCode, Handoff, VersionedContract, registered, serializable_types
from contracts.base import defined_contracts
from contracts.registry import by_name, export_schemas, json_schema, render_schema
from tests.contracts.examples import EXAMPLES, contract_id, example_problems
from tests.contracts.strategies import instances

SERDE_LOGGER = "langgraph.checkpoint.serde.jsonplus"

NEW_MODULE = '''
    """A contract nobody imports or lists: it must be found on its own."""

    from __future__ import annotations

    from enum import Enum

    from pydantic import Field

    from contracts.base import Contract, VersionedContract
    from contracts.errors import ErrorCode


    class Mood(str, Enum):
        """How the memo reads."""

        CALM = "calm"
        URGENT = "urgent"


    class MemoLine(Contract):
        """One line of a memo."""

        text: str = Field(description="The line.")
        mood: Mood = Field(description="How it reads.")


    class {name}(VersionedContract):
        """A memo one agent leaves for the next."""

        VERSION = "2.3"

        lines: list[MemoLine] = Field(description="The lines.")
        codes: dict[str, ErrorCode] = Field(default_factory=dict, description="Codes by line.")

        EXAMPLES = [
            {"lines": [{"text": "Check src-2.", "mood": "urgent"}], "codes": {"0": "STALE_INPUT"}}
        ]
'''


@dataclass
class NewModule:
    module: ModuleType
    contract: type[VersionedContract]
    line: type[BaseModel]
    mood: type[Enum]


@pytest.fixture
def new_contract_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NewModule]:
    """A new file in the ``contracts`` package (a folder added to its path), not yet imported."""
    suffix = uuid.uuid4().hex[:8]
    module_name = f"memo_{suffix}"
    class_name = f"Memo{suffix.upper()}"
    folder = tmp_path / "more_contracts"
    folder.mkdir()
    (folder / f"{module_name}.py").write_text(
        textwrap.dedent(NEW_MODULE).replace("{name}", class_name), encoding="utf-8"
    )
    monkeypatch.setattr(contracts, "__path__", [*contracts.__path__, str(folder)])
    qualified = f"contracts.{module_name}"
    assert qualified not in sys.modules
    try:
        before = {model.__name__ for model in registered()}
        assert class_name in before, "registered() did not import the new module"
        module = sys.modules[qualified]
        yield NewModule(
            module=module,
            contract=getattr(module, class_name),
            line=module.MemoLine,
            mood=module.Mood,
        )
    finally:
        monkeypatch.undo()
        sys.modules.pop(qualified, None)
        if hasattr(contracts, module_name):
            delattr(contracts, module_name)
    assert class_name not in {model.__name__ for model in registered()}


def test_a_contract_in_a_new_module_is_registered_without_being_listed(
    new_contract_module: NewModule,
) -> None:
    memo = new_contract_module.contract
    assert memo in registered()
    assert by_name()[memo.__name__] is memo
    assert memo.__name__ not in contracts.__all__


def test_a_contract_in_a_new_module_is_schema_exported_with_its_own_version(
    new_contract_module: NewModule, tmp_path: Path
) -> None:
    memo = new_contract_module.contract
    written = {path.name: path for path in export_schemas(tmp_path / "schemas")}
    assert f"{memo.__name__}.json" in written
    text = written[f"{memo.__name__}.json"].read_text(encoding="utf-8")
    assert text == render_schema(memo)
    schema = Draft202012Validator(json.loads(text))
    instance = memo.model_validate(
        {"lines": [{"text": "Check src-2.", "mood": "urgent"}], "codes": {"0": "STALE_INPUT"}}
    )
    assert list(schema.iter_errors(instance.model_dump(mode="json"))) == []
    assert schema.schema["properties"]["schema_version"]["enum"] == ["2.3"]
    assert instance.schema_version == "2.3"


def test_a_contract_in_a_new_module_brings_its_own_example_and_strategy(
    new_contract_module: NewModule,
) -> None:
    memo = new_contract_module.contract
    assert example_problems(memo) == []
    assert json_schema(memo)["examples"] == list(memo.EXAMPLES)

    @settings(max_examples=20, deadline=None, database=None)
    @given(instance=instances(memo))
    def round_trips(instance: VersionedContract) -> None:
        assert type(instance) is memo
        assert memo.model_validate_json(instance.model_dump_json()) == instance

    round_trips()


def test_a_contract_in_a_new_module_has_its_nested_models_and_enums_allowlisted(
    new_contract_module: NewModule,
) -> None:
    allowed = serializable_types()
    for kind in (
        new_contract_module.contract,
        new_contract_module.line,
        new_contract_module.mood,
        ErrorCode,
    ):
        assert kind in allowed, kind


def test_a_contract_in_a_new_module_round_trips_through_the_checkpoint_serializer(
    new_contract_module: NewModule, caplog: pytest.LogCaptureFixture
) -> None:
    memo = new_contract_module.contract
    mood = new_contract_module.mood
    instance = memo.model_validate(
        {"lines": [{"text": "Check src-2.", "mood": "urgent"}], "codes": {"0": "STALE_INPUT"}}
    )
    serde = JsonPlusSerializer(allowed_msgpack_modules=serializable_types())
    with caplog.at_level(logging.DEBUG, logger=SERDE_LOGGER):
        restored = serde.loads_typed(serde.dumps_typed({"memo": instance}))["memo"]
    assert [record.getMessage() for record in caplog.records] == []
    assert type(restored) is memo
    assert restored == instance
    assert type(restored.lines[0].mood) is mood
    assert restored.codes == {"0": ErrorCode.STALE_INPUT}


def test_the_serializer_check_would_catch_a_contract_missing_from_the_allowlist(
    new_contract_module: NewModule, caplog: pytest.LogCaptureFixture
) -> None:
    memo = new_contract_module.contract
    instance = memo.model_validate({"lines": [{"text": "x", "mood": "calm"}]})
    without = [kind for kind in serializable_types() if kind is not memo]
    serde = JsonPlusSerializer(allowed_msgpack_modules=without)
    with caplog.at_level(logging.WARNING, logger=SERDE_LOGGER):
        restored = serde.loads_typed(serde.dumps_typed({"memo": instance}))["memo"]
    assert isinstance(restored, dict)
    assert any(memo.__name__ in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("model", registered(), ids=contract_id)
def test_every_registered_example_round_trips_through_the_allowlisted_serializer(
    model: type[VersionedContract], caplog: pytest.LogCaptureFixture
) -> None:
    serde = JsonPlusSerializer(allowed_msgpack_modules=serializable_types())
    with caplog.at_level(logging.DEBUG, logger=SERDE_LOGGER):
        restored = serde.loads_typed(serde.dumps_typed(EXAMPLES[model]))
    assert [record.getMessage() for record in caplog.records] == []
    assert type(restored) is model
    assert restored == EXAMPLES[model]


def test_a_contract_defined_inside_a_function_is_not_registered() -> None:
    class Local(VersionedContract):
        """Cannot be revived from a checkpoint: no module attribute holds it."""

        note: str

    assert Local in defined_contracts()
    assert Local not in registered(package=Local.__module__)


def test_registry_refuses_two_contracts_with_one_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "dupes"
    folder.mkdir()
    body = (
        "from pydantic import Field\n"
        "from contracts.base import VersionedContract\n\n\n"
        "class Handoff(VersionedContract):\n"
        '    """A second Handoff."""\n\n'
        '    note: str = Field(description="x")\n'
    )
    suffix = uuid.uuid4().hex[:8]
    (folder / f"dupe_{suffix}.py").write_text(body, encoding="utf-8")
    monkeypatch.setattr(contracts, "__path__", [*contracts.__path__, str(folder)])
    try:
        with pytest.raises(TypeError, match="two contracts are named Handoff"):
            registered()
    finally:
        monkeypatch.undo()
        sys.modules.pop(f"contracts.dupe_{suffix}", None)
        if hasattr(contracts, f"dupe_{suffix}"):
            delattr(contracts, f"dupe_{suffix}")
    assert by_name()["Handoff"] is Handoff
