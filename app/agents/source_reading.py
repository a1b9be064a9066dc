"""Reading the corpus files research may read: each becomes a source with its snapshot.

The corpus fingerprint hashes the same files without parsing them, so a changed corpus
means new research.

The bytes read are stored as the source's snapshot (what the Reviewer walks quotes back
to), hashed, parsed as a document once, and receipted; a file that cannot be read is an
error detail, not the end of the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from app.corpus.discovery import CorpusDocument, discover
from app.corpus.reading import CorpusNotFound, CorpusPolicy, decode, sha256_of
from app.text.documents import Document, read_document
from contracts import ErrorCode, ErrorDetail, Source, ToolReceipt
from graphs import ArtifactStore, StepInfo
from graphs.errors import SourceRefused


def read_sources(
    documents: list[CorpusDocument],
    store: ArtifactStore,
    step: StepInfo,
    policy: CorpusPolicy,
    clock: Callable[[], datetime],
) -> tuple[list[Source], dict[str, Document], list[ErrorDetail], list[ToolReceipt]]:
    """The sources read, their parsed documents by source id, read errors and receipts."""
    sources: list[Source] = []
    parsed: dict[str, Document] = {}
    errors: list[ErrorDetail] = []
    receipts: list[ToolReceipt] = []
    for document in documents:
        try:
            data = policy.read(document.path, "corpus file")
            text = decode(data, document.path)
        except (OSError, SourceRefused) as error:
            errors.append(
                ErrorDetail(
                    code=ErrorCode.SOURCE_UNREADABLE,
                    source_id=document.source_id,
                    detail=f"could not read {document.path.name}: {error}"[:2000],
                )
            )
            continue
        digest = sha256_of(data)
        document_read = read_document(text, document.media_type)
        snapshot = store.put(
            step.artifact_id(document.source_id), "source", data, document.media_type
        )
        source = Source(
            id=document.source_id,
            uri=document.path.as_uri(),
            title=(document_read.title or document.path.stem)[:300],
            retrieved_at=clock(),
            sha256=digest,
            snapshot=snapshot,
        )
        sources.append(source)
        parsed[source.id] = document_read
        receipts.append(
            ToolReceipt(
                tool="read_source",
                call_id=f"read-{document.source_id}",
                input_summary=document.path.name,
                output_sha256=digest,
                provenance=step.provenance(),
            )
        )
    return sources, parsed, errors, receipts


def corpus_fingerprint(locations: list[Path], policy: CorpusPolicy) -> str:
    """Hash of the names and bytes of every corpus file; a missing corpus hashes as such."""
    digest = hashlib.sha256()
    try:
        documents = discover(locations, policy)
    except CorpusNotFound as error:
        digest.update(f"missing:{error}".encode())
        return digest.hexdigest()
    for document in documents:
        digest.update(str(document.path).encode() + b"\0")
        try:
            digest.update(policy.sha256(document.path).encode())
        except (OSError, SourceRefused) as error:
            digest.update(f"unreadable:{error}".encode())
    return digest.hexdigest()
