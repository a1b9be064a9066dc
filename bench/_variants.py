"""Agent variants for the benchmarks, made by wrapping the offline agents (no app edits).

Each wrapper hands the inner agent a store proxy that changes one kind of artifact on its
way in, and forwards every other attribute (e.g. ``fingerprint``) to the inner agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from app.text.primitives import CITATION
from contracts import (
    ArtifactKind,
    ArtifactRef,
    DraftArticle,
    ResearchBundle,
)
from graphs import (
    AgentOutput,
    ArtifactStore,
    ResearchAgent,
    ResearchRequest,
    WriterAgent,
    WriteRequest,
)

_CITATION_MARKER = re.compile(r"\s*\[claim-[0-9]+\]")
_FILLER_LINE = (
    "- [src-{n}, chars {a}-{b}, score 1.234] The decree was inscribed three times, in "
    "hieroglyphic, Demotic and Greek, which let scholars compare the scripts line by line.\n"
)


def filler(size: int) -> bytes:
    """Deterministic markdown research notes of exactly ``size`` bytes."""
    lines = ["# Research notes\n\n"]
    total = len(lines[0])
    number = 0
    while total < size:
        line = _FILLER_LINE.format(n=number % 7 + 1, a=number * 17, b=number * 17 + 120)
        lines.append(line)
        total += len(line)
        number += 1
    return "".join(lines).encode()[:size]


class _Rewriting:
    """A store that rewrites the content of one artifact kind on ``put``."""

    def __init__(self, store: ArtifactStore, kind: ArtifactKind, rewrite: Any) -> None:
        self._store = store
        self._kind = kind
        self._rewrite = rewrite

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        if kind == self._kind:
            content = self._rewrite(content)
        return self._store.put(artifact_id, kind, content, media_type)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._store, name)


@dataclass
class BigNotesResearch:
    """The offline research agent, but its notes artifact is ``notes_bytes`` long."""

    inner: ResearchAgent
    notes_bytes: int

    def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
        notes = filler(self.notes_bytes)
        proxy = _Rewriting(request.store, "notes", lambda _content: notes)
        return self.inner.run(replace(request, store=proxy))

    def __getattr__(self, name: str) -> Any:
        if name == "inner" or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def drop_a_citation(body: bytes) -> bytes:
    """The draft with one citation marker removed: one uncited sentence, nothing else amiss.

    The marker is the last of the first paragraph past the opening that cites twice or
    more, so the opening still answers the objective and no section is left uncited.
    """
    text = body.decode()
    paragraphs = text.split("\n\n")
    for at, paragraph in enumerate(paragraphs):
        opening = at <= 1 or not any(p.startswith("## ") for p in paragraphs[:at])
        markers = list(_CITATION_MARKER.finditer(paragraph))
        if opening or paragraph.startswith(("#", "-", "```")) or len(markers) < 2:
            continue
        last = markers[-1]
        paragraphs[at] = paragraph[: last.start()] + paragraph[last.end() :]
        return "\n\n".join(paragraphs).encode()
    return _CITATION_MARKER.sub("", text, count=1).encode()


@dataclass
class StubbornWriter:
    """The offline writer, but every draft leaves one sentence uncited.

    The Reviewer therefore requests exactly one change (UNCITED_SENTENCE) every round,
    and the loop runs until ``max_review_rounds``.
    """

    inner: WriterAgent

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        proxy = _Rewriting(request.store, "draft", drop_a_citation)
        output = self.inner.run(replace(request, store=proxy))
        body = request.store.get(output.result.body).decode()
        cited = list(dict.fromkeys(CITATION.findall(body)))
        output.result = output.result.model_copy(update={"cited_claim_ids": cited})
        return output

    def __getattr__(self, name: str) -> Any:
        if name == "inner" or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.inner, name)
