"""Documents read as documents: blocks by kind, and prose sentences with exact offsets.

Research quotes sentences from the corpus and the reviewer checks every quote against the
source bytes, so a sentence must be prose a reader sees as one: never a code fence, a shell
prompt, a table row, a badge line, HTML or a BibTeX entry, and never half of "e.g.".
Markdown blocks come from markdown-it-py (CommonMark plus tables), reStructuredText blocks
from docutils (``rst.py``), HTML's from the main content of the page as Python's
``html.parser`` tokenises it (``html.py``), plain text's from the layout conventions of
text manuals (``plain.py``). Sentences are cut by sentencex, chosen over
pysbd by ``bench/sentence_segmenters.py`` (as right on our text, hundreds of times
faster). Every sentence keeps the exact source span it was read from.
"""

from __future__ import annotations

from functools import lru_cache

from app.text.documents.blocks import markdown_parts
from app.text.documents.document import (
    HTML,
    MARKDOWN,
    PLAIN,
    PROSE_KINDS,
    RST,
    Block,
    BlockKind,
    Document,
    ProseSentence,
)
from app.text.documents.html import html_parts
from app.text.documents.lines import line_bounds, line_span
from app.text.documents.plain import plain_parts
from app.text.documents.rst import rst_parts
from app.text.documents.sentences import prose_sentences

__all__ = [
    "HTML",
    "MARKDOWN",
    "PLAIN",
    "PROSE_KINDS",
    "RST",
    "Block",
    "BlockKind",
    "Document",
    "ProseSentence",
    "read_document",
]


_READERS = {MARKDOWN: markdown_parts, PLAIN: plain_parts, RST: rst_parts, HTML: html_parts}
"""The reader of each media type ``read_document`` reads."""


@lru_cache(maxsize=64)
def read_document(text: str, media_type: str = MARKDOWN) -> Document:
    """Blocks and prose sentences of a text; pure, so a corpus file reads the same each time."""
    starts, ends = line_bounds(text)
    reader = _READERS.get(media_type)
    if reader is None:
        raise ValueError(f"cannot read {media_type!r}: only {', '.join(_READERS)}")
    title, parts = reader(text, starts, ends)
    blocks: list[Block] = []
    found: list[ProseSentence] = []
    for number, part in enumerate(parts):
        first, last = line_span(starts, part.start, part.end)
        block = Block(part.kind, part.start, part.end, first, last, part.section, part.media)
        blocks.append(block)
        if part.reading is not None and part.lines is not None and block.prose:
            found += prose_sentences(text, number, block, part.reading, part.lines, len(found))
    return Document(text, title, tuple(blocks), tuple(found), tuple(starts))
