r"""Sources a reader can open: what research read for a thread, and where the draft cites it.

A draft cites claims (``[claim-1003]``); each claim is a fact quoting one source at a span
of that source's snapshot, the exact bytes research read. This module answers, for a
thread's research bundle and current draft: which sources were read, which cited claims
quote each one, on which lines, and what the snapshot says with every cited span marked.

Snapshots are read from the artifact store (which verifies their sha256) and must also be
the bytes the source records it read (``Source.sha256``); a different text is refused,
never shown. Lines are 1-based and end at ``\n``, as ``sed -n`` and editors count them.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from contracts import ArtifactRef, DraftArticle, ErrorCode, ResearchBundle, Source, Span
from graphs import ArtifactStore
from graphs.errors import ExitCode, HandoffError, IntegrityError, NotFound

OPEN = "⟦"
"""Starts a marked span, followed by the claim ids citing it and one space."""
CLOSE = "⟧"
"""Ends a marked span."""
SOURCE_ID = re.compile(r"^src-[0-9]+$")
_MARKER = re.compile(rf"{OPEN}claim-[0-9]+(?:,claim-[0-9]+)* |{CLOSE}")


class UnknownSource(NotFound):
    """A source id the thread's research did not read; the message names the known ids."""


class UnreadableSnapshot(HandoffError, ValueError):
    """A snapshot whose verified bytes are not UTF-8 text, so no span can be shown in it."""

    code = ErrorCode.SOURCE_UNREADABLE
    exit_code = ExitCode.FAILED


@dataclass(frozen=True)
class CitedClaim:
    """One claim of the draft that quotes a source, and where the quote sits in its snapshot."""

    claim_id: str
    span: Span
    """Character offsets of the quote in the snapshot's decoded text (end exclusive)."""
    first_line: int
    """1-based line of the quote's first character."""
    last_line: int
    """1-based line of the quote's last character."""
    verbatim: bool
    """Whether the snapshot holds the fact's quote at that span (the Reviewer's check)."""

    @property
    def line_range(self) -> str:
        """The line range as a person reads it: ``line 5`` or ``lines 5-7``."""
        if self.first_line == self.last_line:
            return f"line {self.first_line}"
        return f"lines {self.first_line}-{self.last_line}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``handoff sources --json``)."""
        return {
            "claim_id": self.claim_id,
            "span": {"start": self.span.start, "end": self.span.end},
            "lines": {"first": self.first_line, "last": self.last_line},
            "verbatim": self.verbatim,
        }


@dataclass(frozen=True)
class SourceEntry:
    """A source research read for a thread, and the draft's claims that quote it."""

    id: str
    """Source id, ``src-N``: what ``source_text`` and ``handoff show --source`` take."""
    title: str
    file_name: str
    """The file's name, from ``uri`` (the whole uri when it names no file)."""
    uri: str
    """Where research read it (``file://…``)."""
    sha256: str
    """sha256 of the bytes research read; the snapshot must hash to it."""
    snapshot: ArtifactRef
    """Those bytes in the artifact store."""
    cited_by: tuple[CitedClaim, ...]
    """The current draft's claims quoting this source, in the order they appear in it."""

    @property
    def claim_ids(self) -> tuple[str, ...]:
        """Ids of the claims citing this source."""
        return tuple(claim.claim_id for claim in self.cited_by)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``handoff sources --json``)."""
        return {
            "id": self.id,
            "title": self.title,
            "file_name": self.file_name,
            "uri": self.uri,
            "sha256": self.sha256,
            "snapshot": self.snapshot.model_dump(mode="json"),
            "cited_by": [claim.as_dict() for claim in self.cited_by],
        }


def file_name(uri: str) -> str:
    """The last path segment of a URI, unquoted: ``file:///c/a%20b.md`` is ``a b.md``."""
    name = PurePosixPath(unquote(urlsplit(uri).path)).name
    return name or uri


def find_source(bundle: ResearchBundle | None, source_id: str, thread_id: str) -> Source:
    """The source research read under this id; UnknownSource names the ids it did read."""
    source = bundle.source(source_id) if bundle is not None else None
    if source is None:
        known = ", ".join(item.id for item in bundle.sources) if bundle is not None else ""
        raise UnknownSource(
            f"unknown source {source_id!r} in thread {thread_id!r}; "
            + (f"known: {known}" if known else "it has no sources yet (research read none)")
        )
    return source


def snapshot_ref(source: Source) -> ArtifactRef:
    """The source's snapshot ref, refused when it pins other bytes than research read."""
    if source.snapshot.sha256 != source.sha256:
        raise IntegrityError(
            f"snapshot of {source.id} ({source.snapshot.uri} revision {source.snapshot.revision}) "
            f"has sha256 {source.snapshot.sha256}, but research read sha256 {source.sha256}; "
            "refusing to show a text other than the one read"
        )
    return source.snapshot


def snapshot_text(source: Source, store: ArtifactStore) -> str:
    """The decoded snapshot text, exactly the bytes research read (sha256 checked twice)."""
    ref = snapshot_ref(source)
    data = store.get(ref)  # the store verifies the bytes against ref.sha256
    actual = hashlib.sha256(data).hexdigest()
    if actual != source.sha256:
        raise IntegrityError(
            f"snapshot of {source.id} ({ref.uri} revision {ref.revision}) has sha256 "
            f"{actual}, but research read sha256 {source.sha256}; refusing to show it"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnreadableSnapshot(
            f"snapshot of {source.id} ({ref.uri}) is not UTF-8 text "
            f"(byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def cited_claims(
    source: Source, bundle: ResearchBundle, draft: DraftArticle | None, text: str
) -> tuple[CitedClaim, ...]:
    """The draft's cited claims whose fact quotes ``source``, by position in ``text``."""
    if draft is None:
        return ()
    newlines = [match.start() for match in re.finditer("\n", text)]
    found: list[CitedClaim] = []
    for claim_id in dict.fromkeys(draft.cited_claim_ids):  # each once
        fact = bundle.fact(claim_id)
        if fact is None or fact.source_id != source.id:
            continue
        start = min(fact.span.start, len(text))
        last = max(start, min(fact.span.end, len(text)) - 1)
        found.append(
            CitedClaim(
                claim_id=claim_id,
                span=fact.span,
                first_line=bisect_right(newlines, start - 1) + 1,
                last_line=bisect_right(newlines, last - 1) + 1,
                verbatim=text[fact.span.start : fact.span.end] == fact.quote,
            )
        )
    return tuple(sorted(found, key=lambda claim: (claim.span.start, claim.span.end)))


def list_sources(
    bundle: ResearchBundle | None, draft: DraftArticle | None, store: ArtifactStore
) -> list[SourceEntry]:
    """Every source of the bundle, in research's order, with the draft's claims citing it.

    Only the snapshots of cited sources are read (to place their claims on lines).
    """
    if bundle is None:
        return []
    cited_ids = set(draft.cited_claim_ids) if draft is not None else set()
    cited_sources = {fact.source_id for fact in bundle.facts if fact.id in cited_ids}
    entries = []
    for source in bundle.sources:
        claims: tuple[CitedClaim, ...] = ()
        if source.id in cited_sources:
            claims = cited_claims(source, bundle, draft, snapshot_text(source, store))
        entries.append(
            SourceEntry(
                id=source.id,
                title=source.title,
                file_name=file_name(source.uri),
                uri=source.uri,
                sha256=source.sha256,
                snapshot=source.snapshot,
                cited_by=claims,
            )
        )
    return entries


def marked_regions(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, list[str]]]:
    """The regions to mark for claims' spans ``(start, end, claim id)``, in text order.

    Spans that overlap become one region naming every claim in it, so each character of
    the text is marked at most once.
    """
    regions: list[tuple[int, int, list[str]]] = []
    for start, end, claim_id in sorted(spans, key=lambda item: (item[0], item[1])):
        if regions and start < regions[-1][1]:
            first, last, ids = regions[-1]
            regions[-1] = (first, max(last, end), [*ids, claim_id])
        else:
            regions.append((start, end, [claim_id]))
    return regions


def mark(text: str, claims: tuple[CitedClaim, ...] | list[CitedClaim]) -> str:
    """``text`` with each verbatim claim's span wrapped as ``⟦claim-1003 …⟧``.

    Everything outside the markers is left byte for byte. Spans that overlap are wrapped
    once, naming every claim in them (``⟦claim-1003,claim-1004 …⟧``); a claim whose quote
    is not at its span is not marked (``CitedClaim.verbatim``).
    """
    spans = [(c.span.start, c.span.end, c.claim_id) for c in claims if c.verbatim]
    parts: list[str] = []
    position = 0
    for start, end, ids in marked_regions(spans):
        parts += [text[position:start], OPEN, ",".join(ids), " ", text[start:end], CLOSE]
        position = end
    parts.append(text[position:])
    return "".join(parts)


def unmark(marked: str) -> str:
    """The snapshot text again: ``marked`` without the markers :func:`mark` added.

    Exact as long as the snapshot has no ``⟧`` or ``⟦claim-N `` of its own.
    """
    return _MARKER.sub("", marked)


def marked_source(
    bundle: ResearchBundle | None,
    draft: DraftArticle | None,
    source_id: str,
    store: ArtifactStore,
    thread_id: str,
) -> str:
    """The snapshot of ``source_id`` as research read it, its cited spans marked."""
    source = find_source(bundle, source_id, thread_id)
    text = snapshot_text(source, store)
    return mark(text, cited_claims(source, bundle, draft, text) if bundle is not None else ())
