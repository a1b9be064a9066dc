"""The agent card: what this agent takes, what it returns, and where to send it.

The skill's input is the TaskSpec contract and its outputs are the contracts a task
returns, so the card is written from them: their JSON Schemas' descriptions and examples,
not a second description to keep in step.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

from app.a2a.parts import JSON, MARKDOWN
from app.a2a.tasks import CONTRACT_ARTIFACTS
from app.version import package_version
from contracts import HumanDecision, TaskRevision, TaskSpec

SKILL_ID = "research-write-review"
INPUT_FIELDS = ("objective", "questions", "constraints", "corpus", "budget", "policies")


def described_fields(schema: dict[str, Any]) -> list[str]:
    """``name: description`` for each input field, a nested contract's fields by their path.

    So the card names the word limit and the required sections (``constraints.*``), the
    budget's limits and the policies, each in the contract's own words.
    """
    lines = []
    for name in INPUT_FIELDS:
        field = schema["properties"][name]
        nested = field.get("$ref", "").rpartition("/")[2] or None
        if nested:
            for inner, spec in schema["$defs"][nested]["properties"].items():
                lines.append(f"{name}.{inner}: {spec.get('description', '').rstrip('.')}")
        else:
            lines.append(f"{name}: {field.get('description', '').rstrip('.')}")
    return lines


def agent_card(url: str) -> AgentCard:
    """The card served at ``/.well-known/agent-card.json`` for an agent reached at ``url``."""
    fields = "; ".join(described_fields(TaskSpec.model_json_schema()))
    skill = AgentSkill(
        id=SKILL_ID,
        name="Research, write and review an article",
        description=(
            "Researches a corpus for cited facts, writes an article within the task's "
            "constraints and has it reviewed; a person may be asked to approve the research. "
            f"Input: a TaskSpec as a data part (kind task_spec) or the objective as text. "
            f"TaskSpec fields: {fields}. A corpus must lie under the corpus roots the server "
            "allows; any other path is refused. "
            "Output artifacts: the article as markdown text, and "
            f"{', '.join(CONTRACT_ARTIFACTS)} as their contracts' JSON with schema_version, "
            "sha256 and revision. While input-required, answer with a HumanDecision data "
            f"part (kind {HumanDecision.model_fields['kind'].default}); to refine an ended "
            "task, send a TaskRevision data part "
            f"(kind {TaskRevision.model_fields['kind'].default}) with reference_task_ids "
            "naming it: that starts a new task."
        ),
        tags=["research", "writing", "review", "contracts", "citations"],
        examples=[
            json.dumps(example, ensure_ascii=False)
            for example in TaskSpec.model_json_schema().get("examples", [])
        ],
        input_modes=[JSON, "text/plain"],
        output_modes=[MARKDOWN, JSON],
    )
    return AgentCard(
        name="handoff",
        description=(
            "A Research → Writer → Reviewer workflow whose agents hand work to each other "
            "through validated contracts; each task is a durable thread."
        ),
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
            )
        ],
        provider=AgentProvider(organization="handoff", url=url),
        version=package_version(),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=[JSON, "text/plain"],
        default_output_modes=[MARKDOWN, JSON],
        skills=[skill],
    )
