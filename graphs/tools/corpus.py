"""The corpus reads and searches research makes, as declared read tools.

Their code is the research agent's: it knows which files its corpus policy lets it read,
and it searches the index of what it read. The declarations are the graph's, so the runner
checks and receipts every read and search the same way whichever agent does research.
"""

from __future__ import annotations

from pathlib import Path

from contracts import ReadSourceInput, ReadSourceOutput, SearchCorpusInput, SearchCorpusOutput
from graphs.errors import SourceRefused
from graphs.tools.declare import ToolSpec


def _file_name(args: ReadSourceInput) -> str:
    return Path(args.path).name


def _bytes_read(output: ReadSourceOutput) -> str:
    return output.sha256


READ_SOURCE = ToolSpec(
    name="read_source",
    input=ReadSourceInput,
    output=ReadSourceOutput,
    kind="read",
    timeout_seconds=None,  # the corpus policy bounds a read's size and time itself
    errors={OSError: "retryable", SourceRefused: "permission_denied"},
    summary=_file_name,
    digest=_bytes_read,
)
"""Read one corpus file; its snapshot is stored and its receipt names the file."""


SEARCH_CORPUS = ToolSpec(
    name="search_corpus",
    input=SearchCorpusInput,
    output=SearchCorpusOutput,
    kind="read",
    timeout_seconds=None,  # an in-memory index over what was read: bounded by the corpus
    summary=lambda args: f"{args.query} (limit {args.limit})",
)
"""Search the sources read so far for the sentences that address a query."""
