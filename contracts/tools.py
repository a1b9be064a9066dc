"""What crosses the tool boundary: a call's receipt, its structured error, the corpus read.

An agent (or a model) calling a tool gets either the tool's output contract or a
``ToolError``; it never gets a stack trace. Every call, answered or refused, leaves a
``ToolReceipt`` in the handoff and in the attempt's audit row.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from contracts.artifacts import ArtifactRef
from contracts.base import Contract, Identifier, ProseText, Sha256Hex
from contracts.provenance import Provenance

ToolErrorCode = Literal["retryable", "fix_arguments", "permission_denied", "budget_exhausted"]
"""What the caller should do about a refused or failed call: try again later, correct the
arguments (``field`` names which), stop asking for this tool, or stop calling tools."""


class ToolError(Contract):
    """Why a tool call gave no output, specific enough for an agent or a model to act on."""

    code: ToolErrorCode = Field(description="What the caller should do about it.")
    message: str = Field(max_length=2000, description="What happened, without input values.")
    retryable: bool = Field(description="True when the same call may succeed later.")
    field: str | None = Field(
        default=None, max_length=200, description="The input field to fix (fix_arguments)."
    )


class ToolReceipt(Contract):
    """Evidence that a tool call happened, and what it returned (by hash)."""

    tool: str = Field(max_length=100, description="Tool name.")
    call_id: Identifier = Field(description="Stable id of the call.")
    input_summary: str = Field(
        max_length=500,
        description="Short description of the input; fields the tool declares sensitive "
        "are never in it.",
    )
    output_sha256: Sha256Hex | None = Field(default=None, description="Hash of the output.")
    provenance: Provenance = Field(description="Who called it, where.")
    duration_ms: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Wall time of the call."
    )
    cost: int = Field(
        default=0, ge=0, description="Tool calls charged to the task budget (0: refused)."
    )
    error: ToolError | None = Field(
        default=None, description="Why the call gave no output (None: it answered)."
    )


class ReadSourceInput(Contract):
    """One corpus file research may read, as discovery found it."""

    path: str = Field(min_length=1, max_length=4000, description="The file's path.")
    source_id: Identifier = Field(description="The source id it is read as (src-N).")
    media_type: str = Field(max_length=100, description="How it is parsed (text/markdown…).")


class ReadSourceOutput(Contract):
    """The bytes read, as the source's snapshot in the artifact store, and their hash."""

    snapshot: ArtifactRef = Field(description="The snapshot of exactly the bytes read.")
    sha256: Sha256Hex = Field(description="Hash of the bytes read.")
    text: str = Field(description="The decoded text (what the snapshot holds).")


class ToolText(Contract):
    """The output of a tool that answers in text (a LangChain tool without an output model)."""

    content: str = Field(description="What the tool returned, as text (JSON for data).")


class SearchCorpusInput(Contract):
    """A search of the sources research has read, for the sentences that address a query."""

    query: ProseText = Field(description="What to look for, in plain words.")
    limit: int = Field(default=10, ge=1, le=100, description="Hits to return at the most.")
    together: bool = Field(
        default=False,
        description="When no single sentence addresses the query: the few sentences of one "
        "source that address it together.",
    )


class SearchHit(Contract):
    """A sentence that addresses the query, where it stands in its source."""

    source_id: Identifier = Field(description="The source it is in (src-N).")
    start: int = Field(ge=0, description="Character offset of the sentence in the source.")
    end: int = Field(ge=0, description="Character offset just past the sentence.")
    score: float = Field(allow_inf_nan=False, description="BM25 score; higher is better.")
    text: str = Field(max_length=20_000, description="The sentence, as the source has it.")


class SearchCorpusOutput(Contract):
    """The hits, best answer first; none when nothing read addresses the query."""

    hits: list[SearchHit] = Field(default_factory=list, max_length=100, description="Hits.")


class ExportArticleInput(Contract):
    """Write the published article to a file in the export folder."""

    article: ArtifactRef = Field(description="The published article, at its revision.")
    file_name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.md$",
        description="The file it becomes, inside the export folder (no folders).",
    )


class ExportArticleOutput(Contract):
    """Where the article was written, and the hash of the bytes there."""

    path: str = Field(max_length=4000, description="The file written.")
    sha256: Sha256Hex = Field(description="Hash of the file's bytes.")


class WriteConfirmation(Contract):
    """What a person confirms before a write tool runs: the call exactly as it would run."""

    tool: str = Field(max_length=100, description="The write tool.")
    call_id: Identifier = Field(description="The call's id: it runs at most once.")
    arguments: str = Field(
        max_length=2000,
        description="The call's arguments (fields the tool declares sensitive left out).",
    )
    target: str = Field(max_length=4000, description="What the call changes, e.g. a file.")
