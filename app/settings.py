"""The one settings object; built at the edge (CLI, server, tests) and passed down."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_CORPUS = PROJECT_ROOT / "examples" / "corpus"


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
    corpus: list[Path] = Field(
        default_factory=lambda: [BUNDLED_CORPUS],
        description="Corpus used when a task names none (JSON list or one path).",
    )

    fault: str | None = Field(
        default=None,
        description="Fault injection for tests (kill:<node>:<point>, transient:<node>:<n>).",
    )

    def resolved_database_url(self) -> str:
        """The checkpoint URL in force."""
        return self.database_url or f"sqlite:///{self.data_dir / 'handoff.db'}"

    def resolved_artifact_dir(self) -> Path:
        """The artifact folder in force."""
        return self.artifact_dir or self.data_dir / "artifacts"
