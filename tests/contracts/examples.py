"""The examples each registered contract declares on itself (``EXAMPLES``), checked and ready.

Test data lives with its contract, so nothing here lists contracts: a new contract's
examples are read from its class. ``example_problems`` is the check every registered
contract must pass; ``EXAMPLES`` holds each contract's first valid example as an instance,
for tests that need one realistic value.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import ValidationError

from contracts import VersionedContract, registered
from contracts.registry import json_schema


def declared_examples(model: type[VersionedContract]) -> list[Any]:
    """The examples the contract's exported JSON Schema carries (its ``EXAMPLES``)."""
    examples = json_schema(model).get("examples", [])
    return list(examples) if isinstance(examples, list) else [examples]


def _as_written(written: object, example: object) -> bool:
    """The dumped value equals the example wherever the example says something.

    Keys the example leaves out take their defaults, at any depth, so only given keys count.
    """
    if isinstance(example, dict) and isinstance(written, dict):
        return all(key in written and _as_written(written[key], example[key]) for key in example)
    if isinstance(example, list) and isinstance(written, list):
        return len(example) == len(written) and all(map(_as_written, written, example))
    return written == example


def _schema_errors(schema: dict[str, object], instance: object) -> list[str]:
    validator = Draft202012Validator(schema)
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(instance)
    ]


def example_problems(model: type[VersionedContract]) -> list[str]:
    """Every way the contract's examples fall short, each naming the contract; empty if none.

    An example must be a valid instance of the exported JSON Schema, validate as the model,
    read back exactly as written (it shows what writers write, not what readers repair), and
    survive the JSON round trips a checkpoint or a file puts it through.
    """
    name = model.__name__
    examples = declared_examples(model)
    if not examples:
        return [
            f"{name} declares no example: give the class EXAMPLES = [{{...}}], a payload as "
            f"its writers write it (see docs/contracts.md)"
        ]
    schema = json_schema(model)
    problems: list[str] = []
    for index, example in enumerate(examples):
        where = f"{name}.EXAMPLES[{index}]"
        if not isinstance(example, dict):
            problems.append(f"{where} is a {type(example).__name__}, not a JSON object")
            continue
        problems += [
            f"{where} breaks its JSON Schema at {e}" for e in _schema_errors(schema, example)
        ]
        try:
            instance = model.model_validate(example)
        except ValidationError as error:
            problems.append(f"{where} does not validate: {error}")
            continue
        written = instance.model_dump(mode="json")
        changed = sorted(key for key in example if not _as_written(written.get(key), example[key]))
        if changed:
            problems.append(f"{where} does not read back as written: fields {changed} change")
        if model.model_validate_json(instance.model_dump_json()) != instance:
            problems.append(f"{where} does not survive a JSON round trip")
        if model.model_validate(json.loads(instance.model_dump_json())) != instance:
            problems.append(f"{where} does not survive a round trip through plain JSON data")
        problems += [
            f"{where}, as written back, breaks its JSON Schema at {e}"
            for e in _schema_errors(schema, written)
        ]
    return problems


def valid_examples(model: type[VersionedContract]) -> list[VersionedContract]:
    """The contract's examples that validate, as instances (checked fully elsewhere)."""
    instances = []
    for example in declared_examples(model):
        try:
            instances.append(model.model_validate(example))
        except ValidationError:
            continue
    return instances


EXAMPLES: dict[type[VersionedContract], VersionedContract] = {
    model: found[0] for model in registered() if (found := valid_examples(model))
}
"""The first valid example of every registered contract. One that has none is missing here
and fails ``test_every_registered_contract_declares_valid_examples`` by name."""


def contract_id(model: type[VersionedContract]) -> str:
    """Readable pytest id for a parametrized contract class."""
    return model.__name__


__all__ = [
    "EXAMPLES",
    "contract_id",
    "declared_examples",
    "example_problems",
    "valid_examples",
]
