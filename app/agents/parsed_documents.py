"""Parsed documents kept by content, so a corpus read again is not parsed again.

Parsing a corpus file into blocks and prose sentences (``app/text/documents``) is the
costly, deterministic part of reading it: the same text through the same reader gives the
same document. A parsed document is kept under the data folder, named by the sha256 of the
bytes read, the media type and ``READER_VERSION`` (a hash of the reader's code and the
versions of the parsers it calls), and reused by later runs and revisions on the same
corpus.

Reuse never changes what research finds, nor what it can prove:

* the file is still read through the ``read_source`` tool, with its receipt and snapshot;
  the key is the sha256 of the bytes read *now*, so a changed file is parsed again;
* an entry holds no text: its blocks and sentences are spans into the text read now, and
  it is used only when it names the same sha256, media type and reader version, its own
  digest matches and every span and sentence fits that text; anything else (a damaged,
  truncated or foreign entry) is ignored and the file is parsed again, its entry rewritten;
* with ``HANDOFF_ENCRYPTION_KEY`` an entry (which tells what the source says) is sealed
  under the key like an artifact blob (``app.storage.encryption``); an entry that does not
  open under the keys at hand, or one kept in the clear, is ignored.

The index research builds over a whole corpus is kept beside them, by the corpus's
fingerprint (``app/agents/kept_index.py``), in the same sealed form.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import app.text.documents as documents_package
import graphs.markdown
from app.agents.passages import SentenceKeys, sentence_keys
from app.storage.encryption import MAGIC, KeyRing, open_blob, seal_blob
from app.text.documents import Block, Document, ProseSentence, read_document

PARSERS = ("markdown-it-py", "mdurl", "docutils", "sentencex", "snowballstemmer", "rjieba")
"""The distributions the reader calls: a new version of any may read a text otherwise."""
FORMAT = 1
"""The layout of an entry; a new layout names its entries anew."""
PARSED_FOLDER = "parsed"
"""The data folder's subfolder where parsed documents are kept."""


def _reader_modules() -> list[Path]:
    folder = Path(documents_package.__file__).parent
    text = [
        folder.parent / name
        for name in ("primitives.py", "key_terms.py", "antecedents.py", "fragments.py")
    ]
    passages = Path(__file__).parent / "passages.py"
    return [*sorted(folder.glob("*.py")), *text, passages, Path(graphs.markdown.__file__)]


def code_version(label: str, modules: Iterable[Path], distributions: Iterable[str]) -> str:
    """Hash of a label, these source files and these distributions' versions."""
    digest = hashlib.sha256(f"{label}\0".encode())
    for module in modules:
        digest.update(module.name.encode() + b"\0" + module.read_bytes() + b"\0")
    for name in distributions:
        try:
            digest.update(f"{name}=={metadata.version(name)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} missing\0".encode())
    return digest.hexdigest()


def reader_version() -> str:
    """Hash of the reader's and the key terms' source files, and their libraries' versions."""
    return code_version(f"format {FORMAT}", _reader_modules(), PARSERS)


READER_VERSION = reader_version()


class Parsed(NamedTuple):
    """A source's parsed document and the keys of its sentences (``app/agents/passages.py``)."""

    document: Document
    keys: tuple[SentenceKeys, ...]


def parse(text: str, media_type: str) -> Parsed:
    """The text read as a document of its media type, with its sentences' keys."""
    document = read_document(text, media_type)
    return Parsed(document, sentence_keys(document))


def _encode(parsed: Parsed) -> dict[str, Any]:
    document = parsed.document
    sections: dict[tuple[str, ...], int] = {}

    def section(path: tuple[str, ...]) -> int:
        return sections.setdefault(path, len(sections))

    blocks = [
        [b.kind, b.start, b.end, b.first_line, b.last_line, section(b.section), b.media_type]
        for b in document.blocks
    ]
    sentences = [
        [
            s.plain,
            s.start,
            s.end,
            s.index,
            s.block,
            s.position,
            section(s.section),
            sorted(own.terms),
            sorted(own.headings),
            own.leans,
        ]
        for s, own in zip(document.sentences, parsed.keys, strict=True)
    ]
    return {
        "title": document.title,
        "sections": [list(path) for path in sections],
        "blocks": blocks,
        "sentences": sentences,
    }


def _decode(text: str, body: dict[str, Any]) -> Parsed:
    """The document of ``text`` an entry describes; ValueError when it does not fit the text."""
    size = len(text)
    sections = [tuple(str(name) for name in path) for path in body["sections"]]
    blocks = []
    for kind, start, end, first, last, at, media in body["blocks"]:
        if not 0 <= start <= end <= size:
            raise ValueError("a block outside the text")
        blocks.append(Block(kind, start, end, first, last, sections[at], media))
    sentences = []
    known = []
    for plain, start, end, index, block, position, at, terms, headings, leans in body["sentences"]:
        if not 0 <= start <= end <= size or not 0 <= block < len(blocks):
            raise ValueError("a sentence outside the text")
        piece = text[start:end]
        sentences.append(
            ProseSentence(piece, plain, start, end, index, block, position, sections[at])
        )
        known.append(SentenceKeys(frozenset(terms), frozenset(headings), bool(leans)))
    title = body["title"]
    if title is not None and not isinstance(title, str):
        raise ValueError("a title that is not text")
    return Parsed(Document(text, title, tuple(blocks), tuple(sentences)), tuple(known))


@dataclass(frozen=True)
class ParsedDocuments:
    """Parsed documents under ``folder``, sealed under ``keys`` when a key is set."""

    folder: Path
    keys: KeyRing | None = None
    version: str = READER_VERSION
    indexes: bool = True
    """Whether research keeps each corpus's index here too (``app/agents/kept_index.py``);
    False keeps documents only."""

    def key(self, sha256: str, media_type: str) -> str:
        """An entry's name: the bytes read, their media type, the reader."""
        return hashlib.sha256(f"{sha256}\0{media_type}\0{self.version}".encode()).hexdigest()

    def path(self, sha256: str, media_type: str) -> Path:
        """Where the entry of these bytes read as this media type is kept."""
        name = self.key(sha256, media_type)
        return self.folder / name[:2] / f"{name}.json"

    def read(self, text: str, sha256: str, media_type: str) -> Parsed:
        """The document of ``text`` (whose bytes hash to ``sha256``): kept, else parsed now.

        A document parsed now is kept for the next read; a failure to keep it only means
        the next read parses again.
        """
        kept = self.load(text, sha256, media_type)
        if kept is not None:
            return kept
        parsed = parse(text, media_type)
        try:
            self.save(parsed, sha256, media_type)
        except OSError:
            pass
        return parsed

    def load(self, text: str, sha256: str, media_type: str) -> Parsed | None:
        """The kept document of ``text``, or None when there is none to trust."""
        try:
            entry = json.loads(read_kept(self.path(sha256, media_type), self.keys))
            if (entry["sha256"], entry["media_type"], entry["reader"]) != (
                sha256,
                media_type,
                self.version,
            ):
                return None
            return _decode(text, entry["document"])
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None

    def unused_since(self, cutoff: float) -> list[tuple[Path, int]]:
        """Each kept file, document or index, not read or written since ``cutoff``.

        ``cutoff`` is a Unix time; each file comes with its size. A file being written
        (``.*.tmp``) is never one.
        """
        found = []
        for path in sorted(self.folder.rglob("*")) if self.folder.is_dir() else []:
            try:
                info = path.stat()
            except FileNotFoundError:  # removed since it was listed
                continue
            kept = stat.S_ISREG(info.st_mode) and not path.name.startswith(".")
            if kept and info.st_mtime < cutoff:
                found.append((path, info.st_size))
        return found

    def save(self, parsed: Parsed, sha256: str, media_type: str) -> None:
        """Keep the document of the bytes hashing to ``sha256``, written whole or not at all."""
        entry = {
            "sha256": sha256,
            "media_type": media_type,
            "reader": self.version,
            "document": _encode(parsed),
        }
        payload = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()
        write_kept(self.path(sha256, media_type), self.keys, payload)


def read_kept(path: Path, keys: KeyRing | None) -> bytes:
    """What a kept file holds, once it checks out.

    OSError when there is none; ValueError when it does not check out: kept in the clear
    while a key is set, or its bytes not those it was written with (damaged, or sealed
    under a key not at hand).
    """
    stored = path.read_bytes()
    if keys is not None and not stored.startswith(MAGIC):
        raise ValueError("it is kept in the clear while an encryption key is set")
    digest, _, payload = open_blob(keys, stored).partition(b"\n")
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        raise ValueError("its bytes do not match its sha256 (damaged, or sealed under another key)")
    used(path)
    return payload


def used(path: Path) -> None:
    """Mark a kept file read now (its modification time): a prune keeps what is in use.

    A folder this process may only read is left as it is: no prune from it removes
    anything either.
    """
    try:
        os.utime(path)
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise


def write_kept(target: Path, keys: KeyRing | None, payload: bytes) -> None:
    """Keep ``payload`` at ``target`` with its sha256, sealed under ``keys``: whole, or not."""
    plain = hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(seal_blob(keys, plain))
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
