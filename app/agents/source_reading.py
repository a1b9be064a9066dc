"""Reading the corpus files research may read: each becomes a source with its snapshot.

The corpus fingerprint hashes the same files without parsing them, so a changed corpus
means new research.

Each file is read through the declared ``read_source`` tool (``graphs.tools.corpus``), so
the boundary checks, bounds and receipts it: the bytes read are stored as the source's
snapshot (what the Reviewer walks quotes back to) and hashed; a file that cannot be read is
an error detail, not the end of the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from app.corpus.discovery import CorpusDocument, discover
from app.corpus.reading import CorpusNotFound, CorpusPolicy, decode, sha256_of
from contracts import ErrorCode, ErrorDetail, ReadSourceInput, ReadSourceOutput, Source
from graphs import ArtifactStore, StepInfo
from graphs.context import provided
from graphs.errors import SourceRefused
from graphs.nodes.research import research
from graphs.tools import READ_SOURCE, Toolbox, ToolEnv, ToolFn


@dataclass(frozen=True)
class SourceReader:
    """The code of the ``read_source`` tool: one file, as far as the corpus policy allows.

    The bytes read are stored as the source's snapshot before the tool answers, so the
    receipt's hash is of exactly what the snapshot holds.
    """

    policy: CorpusPolicy

    def __call__(self, args: ReadSourceInput, env: ToolEnv) -> ReadSourceOutput:
        """Read, decode and store one file (OSError, SourceRefused: the tool's errors)."""
        path = Path(args.path)
        data = self.policy.read(path, "corpus file")
        text = decode(data, path)
        snapshot = env.store.put(
            env.step.artifact_id(args.source_id), "source", data, args.media_type
        )
        return ReadSourceOutput(snapshot=snapshot, sha256=sha256_of(data), text=text)


class ReadsSources:
    """An agent that provides the code of ``read_source``, bounded by its corpus policy."""

    policy: CorpusPolicy

    def tool(self, name: str) -> ToolFn | None:
        """The code of the corpus read (ToolProvider); no other tool's."""
        return SourceReader(self.policy) if name == READ_SOURCE.name else None


def standing_tools(
    provider: ReadsSources, store: ArtifactStore, step: StepInfo, clock: Callable[[], datetime]
) -> Toolbox:
    """The research node's tools outside a node (a test, a benchmark).

    The same boundary; no runner settles its calls, so the caller reports them itself.
    """
    env = ToolEnv(store=store, step=step, clock=clock)
    return Toolbox(
        node=research.name,
        tools=research.tools,
        env=env,
        code=provided(provider, [READ_SOURCE.name]),
        budget=step.tool_calls_left,
    )


def affordable(
    documents: list[CorpusDocument], calls_left: int | None, *, searches: int
) -> tuple[list[CorpusDocument], list[ErrorDetail]]:
    """The documents the tool-call budget lets research read, and an error naming the rest.

    ``searches`` calls are kept for research's searches, one per question it researches.
    """
    if calls_left is None:
        return documents, []
    reads = max(0, calls_left - searches)
    if reads >= len(documents):
        return documents, []
    skipped = documents[reads:]
    error = ErrorDetail(
        code=ErrorCode.BUDGET_EXHAUSTED,
        detail=f"tool-call budget allows reading {reads} of {len(documents)} sources; skipped "
        + ", ".join(document.source_id for document in skipped),
        field="budget.max_tool_calls",
    )
    return documents[:reads], [error]


class SourceRead(NamedTuple):
    """A corpus file read through ``read_source``: the document asked for, the answer, when."""

    document: CorpusDocument
    output: ReadSourceOutput
    retrieved_at: datetime

    def source(self, title: str | None) -> Source:
        """The source it is, titled by its document's title, else by its file name."""
        return Source(
            id=self.document.source_id,
            uri=self.document.path.as_uri(),
            title=(title or self.document.path.stem)[:300],
            retrieved_at=self.retrieved_at,
            sha256=self.output.sha256,
            snapshot=self.output.snapshot,
        )


def read_sources(
    documents: list[CorpusDocument], tools: Toolbox, clock: Callable[[], datetime]
) -> tuple[list[SourceRead], list[ErrorDetail]]:
    """The files read through the ``read_source`` tool, and an error for each that was not.

    Every file is read through the tool whatever research keeps: what it finds is the
    bytes read now, snapshotted and receipted.
    """
    reads: list[SourceRead] = []
    errors: list[ErrorDetail] = []
    for document in documents:
        args = ReadSourceInput(
            path=str(document.path),
            source_id=document.source_id,
            media_type=document.media_type,
        )
        answer = tools.call(READ_SOURCE.name, args, call_id=f"read-{document.source_id}")
        if answer.error is not None:
            spent = answer.error.code == "budget_exhausted"
            errors.append(
                ErrorDetail(
                    code=ErrorCode.BUDGET_EXHAUSTED if spent else ErrorCode.SOURCE_UNREADABLE,
                    source_id=document.source_id,
                    detail=f"could not read {document.path.name}: {answer.error.message}"[:2000],
                    field=answer.error.field,
                )
            )
            continue
        reads.append(SourceRead(document, answer.output, clock()))
    return reads, errors


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
