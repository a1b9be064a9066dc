"""Artifact storage: where everything too large for graph state lives, revisioned and hashed."""

from app.storage.artifacts.filesystem import FilesystemArtifactStore
from app.storage.artifacts.memory import MemoryArtifactStore
from app.storage.artifacts.postgres import PostgresArtifactStore
from app.storage.artifacts.records import Verification, parse_artifact_uri
from app.storage.artifacts.sqlite import SqliteArtifactStore

__all__ = [
    "FilesystemArtifactStore",
    "MemoryArtifactStore",
    "PostgresArtifactStore",
    "SqliteArtifactStore",
    "Verification",
    "parse_artifact_uri",
]
