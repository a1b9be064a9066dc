"""Artifact storage: where everything too large for graph state lives, revisioned and hashed."""

from app.artifacts.filesystem import FilesystemArtifactStore
from app.artifacts.postgres import PostgresArtifactStore
from app.artifacts.records import Verification, parse_artifact_uri
from app.artifacts.sqlite import SqliteArtifactStore

__all__ = [
    "FilesystemArtifactStore",
    "PostgresArtifactStore",
    "SqliteArtifactStore",
    "Verification",
    "parse_artifact_uri",
]
