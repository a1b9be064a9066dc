"""Which documents a corpus holds: every file of a known suffix under its locations, numbered.

Numbering follows the sorted paths, so the same corpus gives the same source ids on every
run; every path passes the corpus policy before it is counted, and the walk stops as soon
as the corpus is over its file-count limit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.corpus.reading import CORPUS_SUFFIXES, SUFFIXES, CorpusNotFound, CorpusPolicy
from graphs.errors import SourceRefused


@dataclass(frozen=True)
class CorpusDocument:
    """One candidate document, numbered by its place in the sorted corpus."""

    number: int
    path: Path
    media_type: str

    @property
    def source_id(self) -> str:
        """Stable source id: the document's number in the sorted corpus."""
        return f"src-{self.number}"


def discover(locations: list[Path], policy: CorpusPolicy) -> list[CorpusDocument]:
    """Every document under the locations, sorted, so numbering is deterministic.

    A document is a file whose suffix ``CORPUS_SUFFIXES`` names.

    Raises SourceRefused for a location that does not exist, a location or file the
    policy refuses, a corpus with no document of a supported format, or more documents
    than the policy's ``max_files`` (nothing is read): the task must change. CorpusNotFound
    is for a location gone while it was looked at: research finds nothing there and fails.
    """
    files: set[Path] = set()
    for location in locations:
        resolved = policy.admit_location(location)
        if resolved.is_dir():
            for found in _documents_in(location, policy):
                files.add(found)
                policy.check_count(len(files), locations)
            continue
        try:
            info = resolved.stat()
        except FileNotFoundError:  # removed since it was admitted
            raise CorpusNotFound(f"corpus location {location} does not exist") from None
        if resolved.suffix.lower() not in CORPUS_SUFFIXES:
            raise SourceRefused(
                f"corpus file {location} is not a document this workflow reads; supported "
                f"formats: {SUFFIXES}"
            )
        policy.check_file("corpus file", location, info)
        files.add(resolved)
        policy.check_count(len(files), locations)
    unique = sorted(files)
    if not unique:
        raise SourceRefused(unreadable(locations))
    return [
        CorpusDocument(number=index + 1, path=path, media_type=CORPUS_SUFFIXES[path.suffix.lower()])
        for index, path in enumerate(unique)
    ]


SHOWN_OTHERS = 5
"""Files of other formats an empty corpus's refusal names; the rest are counted."""


def unreadable(locations: list[Path]) -> str:
    """Why a corpus with no document of a supported format is refused: what it holds.

    Refused before anything is saved (the task must name another corpus), naming files of
    the formats it does not read (PDF, word processor files, images) and those it does.
    """
    others = sorted(
        Path(parent, name)
        for location in locations
        for parent, _, names in os.walk(location)
        for name in names
        if not name.startswith(".")
    )
    where = ", ".join(str(location) for location in locations)
    if not others:
        return f"corpus {where} holds no document; supported formats: {SUFFIXES}"
    shown = ", ".join(str(path) for path in others[:SHOWN_OTHERS])
    more = f" and {len(others) - SHOWN_OTHERS} more" if len(others) > SHOWN_OTHERS else ""
    return (
        f"corpus {where} holds no document this workflow reads, only {shown}{more}; "
        f"supported formats: {SUFFIXES}"
    )


def _documents_in(folder: Path, policy: CorpusPolicy) -> Iterator[Path]:
    """The resolved documents below a folder (links to folders are not entered).

    A generator, so the caller can stop the walk as soon as the corpus is over its limit.
    """
    for parent, folders, names in os.walk(folder):
        for name in folders:
            if Path(parent, name).is_symlink():  # not entered, but never a way out either
                policy.admit(Path(parent, name), "corpus folder")
        for name in names:
            if Path(name).suffix.lower() not in CORPUS_SUFFIXES:
                continue
            path = Path(parent, name)
            resolved = policy.admit(path, "corpus file")
            try:
                info = resolved.stat()
            except FileNotFoundError:
                continue  # a dangling link inside the roots: nothing to read, as before
            policy.check_file("corpus file", path, info)
            if resolved.suffix.lower() not in CORPUS_SUFFIXES:
                raise SourceRefused(
                    f"corpus file {path} links to {resolved}, which is not a {SUFFIXES} document"
                )
            yield resolved
