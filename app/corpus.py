"""Finding and reading corpus documents; each read is a tool call with a receipt."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

CORPUS_SUFFIXES = {".md": "text/markdown", ".txt": "text/plain"}


class CorpusNotFound(FileNotFoundError):
    """A corpus location that does not exist or holds no readable documents."""


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


def discover(locations: list[Path]) -> list[CorpusDocument]:
    """Every .md/.txt file under the locations, sorted, so numbering is deterministic."""
    files: list[Path] = []
    for location in locations:
        if location.is_dir():
            files.extend(
                path
                for path in location.rglob("*")
                if path.is_file() and path.suffix.lower() in CORPUS_SUFFIXES
            )
        elif location.is_file():
            if location.suffix.lower() not in CORPUS_SUFFIXES:
                raise CorpusNotFound(
                    f"corpus file {location} is not .md or .txt; expected one of "
                    f"{sorted(CORPUS_SUFFIXES)}"
                )
            files.append(location)
        else:
            raise CorpusNotFound(f"corpus location {location} does not exist")
    unique = sorted({path.resolve() for path in files})
    if not unique:
        raise CorpusNotFound(
            "no .md or .txt documents found in corpus: " + ", ".join(str(p) for p in locations)
        )
    return [
        CorpusDocument(number=index + 1, path=path, media_type=CORPUS_SUFFIXES[path.suffix.lower()])
        for index, path in enumerate(unique)
    ]


def sha256_of(data: bytes) -> str:
    """Hex sha256, the hash every source and artifact is pinned by."""
    return hashlib.sha256(data).hexdigest()
