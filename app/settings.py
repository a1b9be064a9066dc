"""The one settings object; built at the edge (CLI, server, tests) and passed down."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.agents.models import OFFLINE, check_spec
from app.corpus.reading import DEFAULT_MAX_FILES, CorpusPolicy
from app.durations import parse_duration
from app.faults.rules import parse_faults
from app.mcp import McpGrant, McpServer

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_CORPUS = PROJECT_ROOT / "examples" / "corpus"


def path_list(value: Any) -> Any:
    """A list setting as people type it: a path, several, or a JSON list.

    Several paths are joined by the OS path separator (``:`` on Linux and macOS), as in
    ``PATH``; anything but text is left to validation.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        return json.loads(text)
    return [part for part in text.split(os.pathsep) if part.strip()]


PathList = Annotated[list[Path], NoDecode, BeforeValidator(path_list)]
"""Paths from the environment: ``/a``, ``/a:/b`` or ``["/a", "/b"]``."""


def retention_age(value: Any) -> Any:
    """``30d`` as the timedelta it means; anything but text is left to validation."""
    if isinstance(value, str):
        return parse_duration(value, "HANDOFF_RETENTION_OLDER_THAN")
    return value


class Settings(BaseSettings):
    """Every knob of the runtime, read from ``HANDOFF_*`` variables (and ``.env``)."""

    model_config = SettingsConfigDict(
        env_prefix="HANDOFF_",
        env_file=".env",
        env_ignore_empty=True,
        extra="ignore",
        frozen=True,
    )

    data_dir: Path = Field(
        default=Path(".handoff"), description="Folder for the SQLite database and artifacts."
    )
    database_url: str | None = Field(
        default=None,
        description="Checkpoint store: sqlite:///path, postgresql://..., or memory://. "
        "Default: sqlite:///<data_dir>/handoff.db.",
    )
    artifact_dir: Path | None = Field(
        default=None, description="Artifact store folder. Default: <data_dir>/artifacts."
    )
    export_dir: Path | None = Field(
        default=None,
        description="Where a task that asks for an export (--export) writes its article, "
        "once a person confirmed the write. Default: <data_dir>/exports.",
    )
    graphs_config: Path = Field(
        default=PROJECT_ROOT / "langgraph.json",
        description="The langgraph.json whose 'graphs' are the graphs the CLI, Workflow and "
        "server run (docs/adapt.md, A second graph). Default: the project's.",
    )
    artifact_store: Literal["auto", "database", "filesystem", "memory"] = Field(
        default="auto",
        description="Where artifacts live: 'database' (PostgreSQL tables beside the "
        "checkpoints), 'filesystem' (artifact_dir), 'memory' (this process only; needs a "
        "memory:// database_url), or 'auto' (database for a PostgreSQL database_url, else "
        "filesystem).",
    )
    database_timeout: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds a PostgreSQL connect, pool wait or unanswered query may take "
        "before the run fails as 'database unavailable' instead of hanging.",
    )
    corpus: PathList = Field(
        default_factory=lambda: [BUNDLED_CORPUS],
        description="Corpus used when a task names none (a path, several joined by the OS "
        "path separator, or a JSON list).",
    )
    corpus_roots: PathList = Field(
        default_factory=list,
        description="Folders corpus paths may resolve into, besides the bundled corpus and "
        "the current working folder (a path, several joined by the OS path separator, or a "
        "JSON list). Run input names files, and dev-server clients send run input: nothing "
        "outside these folders is read.",
    )
    corpus_max_bytes: int = Field(
        default=10_000_000,
        ge=1,
        description="Largest corpus file read, in bytes; a larger one is refused unread.",
    )
    corpus_read_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds reading one corpus file may take before it is given up.",
    )
    corpus_max_files: int = Field(
        default=DEFAULT_MAX_FILES,
        ge=1,
        description="Most documents (files of a format research reads) one corpus may hold; "
        "a task naming more is refused before any is read. Every document becomes a source "
        "in each later checkpoint of the thread.",
    )
    worker_heartbeat_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds between a fleet worker's heartbeats; a worker silent for three "
        "of them is taken for dead and its job is queued again.",
    )
    worker_max_attempts: int = Field(
        default=5,
        ge=1,
        le=100,
        description="Attempts a fleet job gets when its thread is busy elsewhere or the "
        "database is unavailable.",
    )
    worker_outage_seconds: float = Field(
        default=900.0,
        gt=0,
        le=86400,
        description="Seconds a running fleet worker waits for a lost database to come back "
        "(retrying with backoff, one log line) before it exits with code 9.",
    )
    mcp_servers: dict[str, McpServer] = Field(
        default_factory=dict,
        description='MCP servers by name, as JSON: {"notes": {"command": "python", "args": '
        '["-m", "notes_server"]}} (stdio) or {"docs": {"url": "http://127.0.0.1:8000/mcp"}}.',
    )
    mcp_tools: list[McpGrant] = Field(
        default_factory=list,
        description='MCP tools given to nodes, as JSON: [{"node": "writer", "server": "notes", '
        '"tool": "lookup", "max_calls": 3}] (also timeout_seconds, trim_bytes, name).',
    )
    sweep_seconds: float = Field(
        default=60.0,
        gt=0,
        le=86400,
        description="Seconds between a fleet worker's sweeps: each answers the requests past "
        "their task's decision_timeout with their pause's default, as `handoff sweep` does.",
    )
    retention_older_than: Annotated[timedelta | None, BeforeValidator(retention_age)] = Field(
        default=None,
        description="Fleet workers prune the threads that ended longer ago than this "
        "(30d, 12h, 90m), as `handoff prune --older-than` does, when they start and every "
        "hour. Unset: they prune nothing.",
    )
    retention_keep_last: int = Field(
        default=0,
        ge=0,
        description="The most recently ended threads the workers' pruning keeps, however old.",
    )

    encryption_key: SecretStr | None = Field(
        default=None,
        description="Encrypts checkpoints, artifact blobs and the ledger's payloads at rest "
        "(AES-GCM): base64 of 32 random bytes. A database written with it opens only with it.",
    )
    encryption_old_keys: SecretStr | None = Field(
        default=None,
        description="Keys rotated out, comma-separated (same form): data written under them "
        "stays readable; new data is written under encryption_key.",
    )

    fault: str | None = Field(
        default=None,
        description="Fault injection for tests (kill:<node>:<point>, transient:<node>:<n>).",
    )
    model: str = Field(
        default=OFFLINE,
        description="Chat model of every agent: 'offline' (deterministic, no model) or "
        "provider:model for LangChain's init_chat_model, e.g. openai:gpt-4.1-mini.",
    )
    agent_models: dict[str, str] = Field(
        default_factory=dict,
        description='Per-node model overrides as JSON, e.g. {"research": "ollama:llama3.1"}; '
        "a node left out uses model.",
    )

    @field_validator("model")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        return check_spec(value)

    @field_validator("agent_models")
    @classmethod
    def _agent_models(cls, value: dict[str, str]) -> dict[str, str]:
        return {node: check_spec(spec) for node, spec in value.items()}

    @field_validator("fault")
    @classmethod
    def _fault(cls, value: str | None) -> str | None:
        parse_faults(value, None)
        return value

    def model_for(self, node: str) -> str:
        """The model spec in force for one node's agent: its override, else ``model``."""
        return self.agent_models.get(node) or self.model

    def with_overrides(self, **values: Any) -> Settings:
        """A copy with some settings changed, validated like the originals."""
        return type(self)(**{**self.model_dump(), **values})

    def corpus_policy(self) -> CorpusPolicy:
        """The corpus rules in force: roots (resolved now, from this working folder), limits."""
        roots = (BUNDLED_CORPUS, Path.cwd(), *self.corpus_roots)
        return CorpusPolicy(
            roots=tuple(dict.fromkeys(root.resolve() for root in roots)),
            max_bytes=self.corpus_max_bytes,
            read_seconds=self.corpus_read_seconds,
            max_files=self.corpus_max_files,
            configured=tuple(self.corpus_roots),
        )

    def resolved_database_url(self) -> str:
        """The checkpoint URL in force."""
        return self.database_url or f"sqlite:///{self.data_dir / 'handoff.db'}"

    def resolved_artifact_store(self) -> Literal["database", "filesystem", "memory"]:
        """Where artifacts live for these settings ('auto' resolved)."""
        if self.artifact_store != "auto":
            return self.artifact_store
        scheme = self.resolved_database_url().split(":", 1)[0]
        return "database" if scheme in ("postgresql", "postgres") else "filesystem"

    def resolved_artifact_dir(self) -> Path:
        """The artifact folder in force."""
        return self.artifact_dir or self.data_dir / "artifacts"

    def resolved_export_dir(self) -> Path:
        """The export folder in force."""
        return self.export_dir or self.data_dir / "exports"
