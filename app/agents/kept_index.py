"""Research's index of a corpus, kept by the corpus's fingerprint so later runs load it.

On a big corpus, building the index (passages, the rarity of their key terms, BM25 over
them) costs more than reading the files (bench/RESULTS.md, P7). So research keeps the index
it built beside the parsed documents (``index/``), one file per corpus (its files, and
whether research was widened), holding what it was built from: every source read, in order
(its id, path, media type and the sha256 of the bytes read), and the versions of the reader
and of the code that builds the index. Later runs and revisions on the same corpus load it;
a changed corpus or changed code builds it again, in place of the old one.

Reuse changes neither what research finds nor what it can prove:

* every file is still read through the ``read_source`` tool, with its receipt and snapshot,
  and an index is used only when it was built from the bytes read now;
* an index holds no quote: a passage's sentence is its span of the text read now, checked
  to fit it, so a quote is still the source's bytes;
* the file holds the sha256 of its content and, with ``HANDOFF_ENCRYPTION_KEY``, is sealed
  under the key like a parsed document (its key terms tell what the sources say); one that
  does not check out is named in a warning, built again and rewritten.

The format is numpy's (``.npz``, read without pickle): integer columns and term ids, the
BM25 matrix as bm25s holds it, and a JSON header with the strings. The file was written by
this code and checks out before any of it is used, so its passages are made as they are,
without validating each again.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from numpy.lib.npyio import NpzFile

from app.agents import ranking
from app.agents.parsed_documents import ParsedDocuments, code_version, parse, read_kept, write_kept
from app.agents.passages import MAX_QUOTE, Passage, passages_of
from app.agents.ranking import CorpusIndex
from app.agents.source_reading import SourceRead
from app.text import relevance
from app.text.documents import ProseSentence
from app.text.fragments import MIN_FACT_WORDS
from app.text.key_terms import heading_keys
from app.text.relevance import Rarity
from contracts import Source

log = logging.getLogger(__name__)

FORMAT = 1
"""The layout of a kept index; a new layout names its indexes anew."""
INDEX_FOLDER = "index"
"""The parsed documents' subfolder where indexes are kept."""
INDEX_VERSION = code_version(
    f"index format {FORMAT}, quotes up to {MAX_QUOTE}, facts of {MIN_FACT_WORDS} words",
    [Path(__file__), Path(ranking.__file__), Path(relevance.__file__)],
    ("bm25s", "numpy"),
)
"""Hash of the code that builds an index: changed code builds it anew."""
_DAMAGE = (ValueError, KeyError, IndexError, TypeError, EOFError, zipfile.BadZipFile)
"""What reading a kept index that does not check out raises."""
_COLUMNS = 12
"""Per passage: source, start, end, index, block, position, section, headings, first
line, last line, leans, whether it introduces a code example."""


def index_corpus(
    reads: list[SourceRead],
    kept: ParsedDocuments | None,
    *,
    widen: bool,
    min_shared_terms: int,
) -> tuple[list[Source], CorpusIndex]:
    """The sources read and their index: loaded where ``kept`` holds it, else built (and kept).

    Without ``kept`` every file is parsed and the index built; with it, documents and the
    index are kept there (``kept.indexes`` False: documents only).
    """
    if kept is None or not kept.indexes:
        return build_index(reads, kept, widen=widen, min_shared_terms=min_shared_terms)
    path = kept.folder / INDEX_FOLDER / f"{_digest(reads, f'widen {widen}')}.npz"
    built_from = _digest(reads, f"{INDEX_VERSION}\0{kept.version}\0{widen}", hashes=True)
    found = _load(path, kept, built_from, reads, widen=widen, min_shared_terms=min_shared_terms)
    if found is not None:
        return found
    sources, index = build_index(reads, kept, widen=widen, min_shared_terms=min_shared_terms)
    try:
        write_kept(path, kept.keys, _encode(built_from, sources, index))
    except OSError as error:
        log.warning("could not keep index %s (%s): the next run builds it again", path, error)
    return sources, index


def _load(
    path: Path,
    kept: ParsedDocuments,
    built_from: str,
    reads: list[SourceRead],
    *,
    widen: bool,
    min_shared_terms: int,
) -> tuple[list[Source], CorpusIndex] | None:
    """The kept index, or None: none is kept, or it was built from other bytes or code.

    One that does not check out is named in a warning and is None too.
    """
    try:
        payload = read_kept(path, kept.keys)
        return _decode(payload, built_from, reads, widen=widen, min_shared_terms=min_shared_terms)
    except FileNotFoundError:
        return None
    except (OSError, *_DAMAGE) as error:
        log.warning("kept index %s does not check out (%s); building it again", path, error)
        return None


def _digest(reads: list[SourceRead], head: str, *, hashes: bool = False) -> str:
    """Hash of ``head`` and each source read (id, path, media type; ``hashes``: its sha256).

    Without hashes it names the corpus's index file: one per corpus (and widening), so a
    changed corpus replaces its index rather than adding one. With them it is what the
    index was built from, which must match for the index to be used.
    """
    digest = hashlib.sha256(f"{head}\n".encode())
    for read in reads:
        document = read.document
        line = f"{document.source_id}\0{document.path}\0{document.media_type}"
        digest.update(f"{line}\0{read.output.sha256 if hashes else ''}\n".encode())
    return digest.hexdigest()


def build_index(
    reads: list[SourceRead],
    kept: ParsedDocuments | None,
    *,
    widen: bool,
    min_shared_terms: int,
) -> tuple[list[Source], CorpusIndex]:
    """Parse each file read (or take its kept document), split it into passages, index them."""
    sources: list[Source] = []
    passages: list[Passage] = []
    for read in reads:
        text, media_type = read.output.text, read.document.media_type
        if kept is None:
            parsed = parse(text, media_type)
        else:
            parsed = kept.read(text, read.output.sha256, media_type)
        source = read.source(parsed.document.title)
        sources.append(source)
        passages += passages_of(source, *parsed)
    by_source: dict[str, set[str]] = {}
    for passage in passages:  # one set per source, grown in place: linear in the passages
        by_source.setdefault(passage.source.id, set()).update(passage.context)
    titles = [heading_keys((), source.title) for source in sources]  # else the file name
    rarity = Rarity.of(
        (passage.terms for passage in passages), map(frozenset, by_source.values()), titles
    )
    return sources, CorpusIndex(passages, rarity, min_shared_terms, widen=widen)


def _encode(built_from: str, sources: list[Source], index: CorpusIndex) -> bytes:
    words: dict[str, int] = {}

    def ids(terms: frozenset[str]) -> list[int]:
        return [words.setdefault(term, len(words)) for term in sorted(terms)]

    at = {source.id: number for number, source in enumerate(sources)}
    sections: dict[tuple[str, ...], int] = {}
    headings: dict[frozenset[str], int] = {}
    rows, terms = [], []
    for passage in index.passages:
        sentence = passage.sentence
        section = sections.setdefault(sentence.section, len(sections))
        heading = headings.setdefault(passage.headings, len(headings))
        rows.append(
            [
                *(at[passage.source.id], sentence.start, sentence.end, sentence.index),
                *(sentence.block, sentence.position, section, heading),
                *(passage.first_line, passage.last_line, passage.leans, passage.has_example),
            ]
        )
        terms.append(ids(passage.terms))
    heading_ids = [ids(found) for found in headings]
    documents = [
        [words.setdefault(term, len(words)), count]
        for term, count in sorted(index.rarity.documents.items())
    ]
    postings = sorted(index.rarity.postings.items())
    posted = [words.setdefault(term, len(words)) for term, _ in postings]
    tokens: list[str] = []
    scores: dict[str, Any] = {}
    if index.retriever is not None:
        vocabulary = index.retriever.vocab_dict
        tokens = sorted(vocabulary, key=vocabulary.__getitem__)
        if [vocabulary[token] for token in tokens] != list(range(len(tokens))):
            raise ValueError("bm25s numbered its vocabulary with gaps: cannot keep it")
        scores = {name: index.retriever.scores[name] for name in ("data", "indices", "indptr")}
    header = {
        "format": FORMAT,
        "built_from": built_from,
        "titles": [source.title for source in sources],
        "sections": [list(section) for section in sections],
        "plains": [
            None if passage.sentence.plain == passage.sentence.text else passage.sentence.plain
            for passage in index.passages
        ],
        "words": list(words),
        "tokens": tokens,
    }
    arrays = {
        "header": np.frombuffer(json.dumps(header, ensure_ascii=False).encode(), np.uint8),
        "passages": _integers(rows).reshape(-1, _COLUMNS),
        **_ragged("terms", terms),
        **_ragged("headings", heading_ids),
        "usable": _integers(index.usable),
        "documents": _integers(documents).reshape(-1, 2),
        "posted": _integers(posted),
        **_ragged("postings", [sorted(where) for _, where in postings]),
        **{f"bm25_{name}": array for name, array in scores.items()},
    }
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


def _integers(values: list[Any]) -> np.ndarray:
    """Non-negative integers as 32-bit ones when they fit (offsets into texts under 2 GB)."""
    array = np.asarray(values, dtype=np.int64)
    return array.astype(np.int32) if not array.size or array.max() < 2**31 else array


def _ragged(name: str, rows: list[list[int]]) -> dict[str, np.ndarray]:
    """Rows of ids as one flat array and where each row starts (and the last ends)."""
    starts = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in rows], out=starts[1:])
    flat = np.fromiter((item for row in rows for item in row), dtype=np.int32, count=starts[-1])
    return {name: flat, f"{name}_at": _integers(starts.tolist())}


def _decode(
    payload: bytes,
    built_from: str,
    reads: list[SourceRead],
    *,
    widen: bool,
    min_shared_terms: int,
) -> tuple[list[Source], CorpusIndex] | None:
    """The sources and index an index file describes; None when built from other bytes.

    None too when other code built it; ValueError when it does not fit the texts read.
    """
    arrays = np.load(io.BytesIO(payload), allow_pickle=False)
    header = json.loads(arrays["header"].tobytes())
    if header["format"] != FORMAT or header["built_from"] != built_from:
        return None
    if len(header["titles"]) != len(reads):
        raise ValueError("not one title per source read")
    sources = [read.source(title) for read, title in zip(reads, header["titles"], strict=True)]
    texts = [read.output.text for read in reads]
    words = np.array(header["words"], dtype=object)
    sections = [tuple(section) for section in header["sections"]]
    rows = arrays["passages"]
    terms, terms_at = _rows("terms", arrays, len(rows), len(words))
    heading_words, headings_at = _rows("headings", arrays, None, len(words))
    _check_rows(rows, [len(text) for text in texts], len(sections), len(headings_at) - 1)
    own = words[terms].tolist()
    heading_sets = [
        frozenset(words[heading_words[start:end]].tolist())
        for start, end in zip(headings_at[:-1].tolist(), headings_at[1:].tolist(), strict=True)
    ]
    titles = [heading_keys((), source.title) for source in sources]
    around: dict[tuple[int, int], frozenset[str]] = {}
    passages = []
    starts = terms_at.tolist()
    plains = header["plains"]
    for number, row in enumerate(rows.tolist()):
        source, start, end, index, block, position, section, heading, first, last, *flags = row
        text = texts[source][start:end]
        plain = plains[number]
        terms_of = frozenset(own[starts[number] : starts[number + 1]])
        context = around.get((heading, source))
        if context is None:
            context = around[heading, source] = heading_sets[heading] | titles[source]
        sentence = ProseSentence(
            text=text,
            plain=text if plain is None else plain,
            start=start,
            end=end,
            index=index,
            block=block,
            position=position,
            section=sections[section],
        )
        passages.append(
            Passage(
                source=sources[source],
                sentence=sentence,
                terms=terms_of,
                headings=heading_sets[heading],
                context=terms_of | context,
                first_line=first,
                last_line=last,
                leans=bool(flags[0]),
                has_example=bool(flags[1]),
            )
        )
    rarity = _rarity(arrays, len(passages), words, titles)
    usable = arrays["usable"]
    if len(usable) and not (0 <= usable.min() and usable.max() < len(passages)):
        raise ValueError("a usable passage that is not one")
    kept = (usable.tolist(), _retriever(arrays, header["tokens"], len(usable)))
    index = CorpusIndex(passages, rarity, min_shared_terms, widen=widen, kept=kept)
    return sources, index


def _rows(name: str, arrays: NpzFile, count: int | None, ids: int) -> tuple[np.ndarray, np.ndarray]:
    """A ragged array, checked to be one: ``count`` rows in order, ids below ``ids``."""
    flat, starts = arrays[name], arrays[f"{name}_at"]
    if count is not None and len(starts) != count + 1:
        raise ValueError(f"{name}: not {count} rows")
    if starts[0] != 0 or starts[-1] != len(flat) or np.any(np.diff(starts) < 0):
        raise ValueError(f"{name}: rows out of order")
    if len(flat) and not (0 <= flat.min() and flat.max() < ids):
        raise ValueError(f"{name}: an id out of range")
    return flat, starts


def _check_rows(rows: np.ndarray, sizes: list[int], sections: int, headings: int) -> None:
    """Every passage's span fits its source's text read now; every table index is one."""
    if rows.ndim != 2 or rows.shape[1] != _COLUMNS:
        raise ValueError("passages: not a table of passages")
    source, start, end = rows[:, 0], rows[:, 1], rows[:, 2]
    if len(rows) and not (0 <= source.min() and source.max() < len(sizes)):
        raise ValueError("a passage of no source read")
    limit = np.asarray(sizes, dtype=np.int64)[source]
    if np.any(start < 0) or np.any(end < start) or np.any(end > limit):
        raise ValueError("a passage outside its source's text")
    for column, size, what in ((6, sections, "section"), (7, headings, "headings")):
        if len(rows) and not (0 <= rows[:, column].min() and rows[:, column].max() < size):
            raise ValueError(f"a passage of no {what}")


def _rarity(
    arrays: NpzFile, passages: int, words: np.ndarray, titles: list[frozenset[str]]
) -> Rarity:
    """The rarity of the key terms over these passages, as ``Rarity.of`` worked it out."""
    posted, documents = arrays["posted"], arrays["documents"]
    flat, starts = _rows("postings", arrays, len(posted), passages)
    if len(posted) and not (0 <= posted.min() and posted.max() < len(words)):
        raise ValueError("postings: an id of no word")
    if documents.ndim != 2 or len(documents) and not documents[:, 0].max() < len(words):
        raise ValueError("documents: an id of no word")
    where, bounds = flat.tolist(), starts.tolist()
    postings = {
        word: frozenset(where[bounds[row] : bounds[row + 1]])
        for row, word in enumerate(words[posted].tolist())
    }
    frequency = Counter({word: len(found) for word, found in postings.items()})
    in_documents = Counter(
        dict(zip(words[documents[:, 0]].tolist(), documents[:, 1].tolist(), strict=True))
    )
    return Rarity(
        passages, frequency, in_documents, frozenset().union(*titles), postings, len(titles)
    )


def _retriever(arrays: NpzFile, tokens: list[str], documents: int) -> bm25s.BM25 | None:
    """The BM25 index bm25s built, as its ``load`` restores one (no files of its own here)."""
    if not tokens:
        return None
    scores = {name: arrays[f"bm25_{name}"] for name in ("data", "indices", "indptr")}
    columns = scores["indptr"]  # bm25s adds its empty token to the vocabulary, not the matrix
    if not 0 < len(columns) <= len(tokens) + 1 or columns[-1] != len(scores["data"]):
        raise ValueError("bm25: not a column per token")
    found = scores["indices"]
    if len(found) and not (0 <= found.min() and found.max() < documents):
        raise ValueError("bm25: a score of no passage")
    retriever = bm25s.BM25()
    retriever.scores = {**scores, "num_docs": documents}
    retriever.vocab_dict = {token: number for number, token in enumerate(tokens)}
    retriever.unique_token_ids_set = set(retriever.vocab_dict.values())
    retriever.nonoccurrence_array = None
    return retriever
