"""The list of contracts: what is exported as JSON Schema and allowed in checkpoints."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

from pydantic import BaseModel

from contracts.artifacts import ArtifactRef
from contracts.audit import NodeRun
from contracts.base import VersionedContract
from contracts.decisions import DecisionLog
from contracts.draft import DraftArticle
from contracts.freshness import FreshnessReport
from contracts.handoff import Handoff
from contracts.human import HumanDecision, HumanRequest
from contracts.outcome import RunOutcome
from contracts.research import ResearchBundle
from contracts.review import ReviewResult
from contracts.task import TaskSpec

TOP_LEVEL_CONTRACTS: tuple[type[VersionedContract], ...] = (
    ArtifactRef,
    DecisionLog,
    DraftArticle,
    FreshnessReport,
    Handoff,
    HumanDecision,
    HumanRequest,
    NodeRun,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
)

SCHEMA_DIR = Path(__file__).parent / "schemas"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def serializable_types() -> list[type]:
    """Every model and enum class that may appear inside a checkpoint.

    LangGraph's msgpack serializer encodes nested pydantic models as dicts but keeps enum
    members as typed values, so both kinds of class need to be on the allowlist.
    """
    import contracts

    found: list[type] = []
    for name in contracts.__all__:
        value = getattr(contracts, name)
        if isinstance(value, type) and issubclass(value, (BaseModel, Enum)):
            found.append(value)
    return found


def json_schema(model: type[BaseModel]) -> dict[str, object]:
    """The JSON Schema (2020-12) of one contract, as committed under ``schemas/``."""
    schema = model.model_json_schema(mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": f"{model.__name__}.json", **schema}


def render_schema(model: type[BaseModel]) -> str:
    """Serialized schema text, stable across runs so the committed files can be compared."""
    return json.dumps(json_schema(model), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Write every top-level contract's schema; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for model in TOP_LEVEL_CONTRACTS:
        path = directory / f"{model.__name__}.json"
        path.write_text(render_schema(model), encoding="utf-8")
        written.append(path)
    return written
