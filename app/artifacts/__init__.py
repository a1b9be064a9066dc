"""Artifact storage: where everything too large for graph state lives, revisioned and hashed."""

from app.artifacts.filesystem import FilesystemArtifactStore, Verification, parse_artifact_uri
from app.artifacts.postgres import PostgresArtifactStore

__all__ = [
    "FilesystemArtifactStore",
    "PostgresArtifactStore",
    "Verification",
    "parse_artifact_uri",
]
