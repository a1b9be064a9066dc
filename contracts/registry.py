"""The registry of contracts: what is exported as JSON Schema and allowed in checkpoints.

Nothing here is a hand-kept list. Top-level contracts register themselves when their class
is defined (``VersionedContract.__pydantic_init_subclass__``); ``registered()`` first
imports every module of the package so a new module counts without being imported or
listed anywhere; the nested models and enums a checkpoint may hold are found by walking
the registered models' field annotations.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import typing
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from contracts.base import VersionedContract, defined_contracts

PACKAGE = __name__.rpartition(".")[0]
"""The package whose contracts are registered by default (``contracts``)."""

SCHEMA_DIR = Path(__file__).parent / "schemas"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

SKIPPED_MODULES = frozenset({"__main__"})
"""Modules never imported by discovery: ``__main__`` runs the schema export on import."""


def import_package(package: str = PACKAGE) -> list[str]:
    """Import every module of ``package`` (recursively); returns their names.

    A contract's module may be imported by nothing else yet (a new file nobody uses so
    far); importing it here is what makes its classes register themselves.
    """
    root = importlib.import_module(package)
    names = [package]
    for module in pkgutil.walk_packages(getattr(root, "__path__", []), prefix=f"{package}."):
        if module.name.rpartition(".")[2] in SKIPPED_MODULES:
            continue
        importlib.import_module(module.name)
        names.append(module.name)
    return names


def _importable(model: type[VersionedContract]) -> bool:
    """The class is what its module holds under its name, as a checkpoint reader looks it up.

    Classes defined inside functions or replaced by a re-definition cannot be revived by
    LangGraph (it imports ``module`` and reads ``name``), so they are not registered.
    """
    module = sys.modules.get(model.__module__)
    return module is not None and getattr(module, model.__qualname__, None) is model


def _in_package(model: type[Any], package: str) -> bool:
    return model.__module__ == package or model.__module__.startswith(f"{package}.")


def registered(package: str = PACKAGE) -> tuple[type[VersionedContract], ...]:
    """Every top-level contract of ``package``, sorted by name, after importing all its modules.

    Raises ``TypeError`` when two contracts share a name: each is exported to
    ``schemas/<Name>.json`` and addressed by name on the command line.
    """
    import_package(package)
    found = [
        model for model in defined_contracts() if _in_package(model, package) and _importable(model)
    ]
    named: dict[str, type[VersionedContract]] = {}
    for model in found:
        other = named.setdefault(model.__name__, model)
        if other is not model:
            raise TypeError(
                f"two contracts are named {model.__name__}: {other.__module__} and "
                f"{model.__module__}; schema files and CLI names would collide"
            )
    return tuple(named[name] for name in sorted(named))


def by_name(package: str = PACKAGE) -> dict[str, type[VersionedContract]]:
    """The registered top-level contracts keyed by class name (as the CLI addresses them)."""
    return {model.__name__: model for model in registered(package)}


def _nested_types(annotation: Any, found: dict[type, None]) -> None:
    """Add every model and enum class an annotation can hold, recursing into models."""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        found.setdefault(annotation, None)
        return
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in found:
            return
        found[annotation] = None
        for field in annotation.model_fields.values():
            _nested_types(field.annotation, found)
        return
    if typing.get_origin(annotation) is typing.Literal:
        for value in typing.get_args(annotation):
            if isinstance(value, Enum):
                found.setdefault(type(value), None)
        return
    for argument in typing.get_args(annotation):
        _nested_types(argument, found)


def serializable_types(package: str = PACKAGE) -> list[type]:
    """Every model and enum class that may appear inside a checkpoint, for the msgpack allowlist.

    LangGraph's msgpack serializer encodes a stored model as its class plus its
    ``model_dump()``, which keeps enum members typed at any depth, so the registered
    contracts, their enums and (harmlessly) their nested models are all allowed, and so is
    every importable contract defined elsewhere (a project's own, outside this package). A
    class missing here would come back from a checkpoint as a plain dict.
    """
    found: dict[type, None] = {}
    elsewhere = [model for model in defined_contracts() if _importable(model)]
    for model in (*registered(package), *elsewhere):
        _nested_types(model, found)
    return sorted(found, key=lambda kind: (kind.__module__, kind.__qualname__))


def json_schema(model: type[BaseModel]) -> dict[str, object]:
    """The JSON Schema (2020-12) of one contract, as committed under ``schemas/``."""
    schema = model.model_json_schema(mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": f"{model.__name__}.json", **schema}


def render_schema(model: type[BaseModel]) -> str:
    """Serialized schema text, stable across runs so the committed files can be compared."""
    return json.dumps(json_schema(model), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export_schemas(directory: Path = SCHEMA_DIR, package: str = PACKAGE) -> list[Path]:
    """Write every registered contract's schema; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for model in registered(package):
        path = directory / f"{model.__name__}.json"
        path.write_text(render_schema(model), encoding="utf-8")
        written.append(path)
    return written


__all__ = [
    "JSON_SCHEMA_DIALECT",
    "PACKAGE",
    "SCHEMA_DIR",
    "by_name",
    "export_schemas",
    "import_package",
    "json_schema",
    "registered",
    "render_schema",
    "serializable_types",
]
