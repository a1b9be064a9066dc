"""Prose sentences of a block, cut by sentencex, each with its exact source span.

sentencex was chosen over pysbd by ``bench/sentence_segmenters.py`` (as right on our text,
hundreds of times faster); a boundary it puts inside "example.com" is joined back.
"""

from __future__ import annotations

import re

import sentencex

from app.text.documents.document import Block, ProseSentence
from app.text.documents.inline import Reading
from app.text.documents.lines import ContentLines
from app.text.primitives import normalize_space
from graphs.markdown import CJK

_CJK_CHAR = re.compile(f"[{CJK}]")
_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
_LETTER = re.compile(r"[^\W\d_]")
_CJK_STOP = re.compile(r"[。！？](?:[」』”’）)】]*)(?=[^\s」』”’）)】。！？…])")
"""A full-width stop (and its closing quotes) with text right after it: a sentence end
sentencex misses when what follows is a digit or a Latin letter ("。2009年，…")."""


def _language(plain: str) -> str:
    """The sentencex rules for a paragraph: Japanese or Chinese when most letters are CJK.

    sentencex ships a Japanese module but none for Chinese: "zh" falls back through its
    zh-* codes to the default rules, which end sentences at 。！？ (with a closing 」) and
    keep the English abbreviations for any Latin text inside.
    """
    if plain.isascii() or _CJK_CHAR.search(plain) is None:
        return "en"
    if 2 * len(_CJK_CHAR.findall(plain)) < len(_LETTER.findall(plain)):
        return "en"
    return "ja" if _KANA.search(plain) else "zh"


def _segments(plain: str, language: str) -> list[tuple[int, int]]:
    """Sentence spans of the plain text, surrounding whitespace stripped, none lost.

    ``sentencex.segment`` returns the sentences as consecutive slices of its input; each is
    found from a cursor (cheaper than building ``get_sentence_boundaries``' dicts). Text it
    did not return, were that ever to happen, becomes a sentence rather than vanish.
    """
    cursor = 0
    spans: list[tuple[int, int]] = []
    pieces = sentencex.segment(language, plain)
    if language in ("zh", "ja"):
        pieces = (part for piece in pieces for part in _after_stops(piece))
    for piece in pieces:
        at = cursor if plain.startswith(piece, cursor) else plain.find(piece, cursor)
        if at < 0:
            continue
        if at > cursor:
            spans.append((cursor, at))
        cursor = at + len(piece)
        spans.append((at, cursor))
    if cursor < len(plain):
        spans.append((cursor, len(plain)))
    found: list[tuple[int, int]] = []
    for start, end in spans:
        piece = plain[start:end]
        body = piece.lstrip()
        if not body:
            continue
        start += len(piece) - len(body)
        end = start + len(body.rstrip())
        if found and _joined(plain, found[-1][1], start):
            found[-1] = (found[-1][0], end)
        else:
            found.append((start, end))
    return found


def _after_stops(piece: str) -> list[str]:
    """A piece cut after each full-width stop that has text right after it."""
    cuts = [match.end() for match in _CJK_STOP.finditer(piece)]
    return [piece[start:end] for start, end in zip([0, *cuts], [*cuts, len(piece)], strict=True)]


def _joined(plain: str, end: int, start: int) -> bool:
    """Whether a boundary the segmenter put between two pieces is no sentence end.

    A Latin stop with no space after it ("ferrule.Reject", "example.com") ends no sentence;
    after a Chinese or Japanese stop no space is the rule, so those boundaries stand.
    """
    return start == end and end > 0 and plain[end - 1] in ".!?" and not plain[end].isspace()


def _seen(body: str) -> str:
    """``normalize_space(body)``, without its regex for the ASCII sentences that need none."""
    if not body.isascii():
        return normalize_space(body)
    if body.isprintable() and "  " not in body:
        return body
    return " ".join(body.split())


def prose_sentences(
    text: str, number: int, block: Block, reading: Reading, lines: ContentLines, first_index: int
) -> list[ProseSentence]:
    """The sentences of one prose block, numbered on from ``first_index``."""
    plain = reading.plain
    after, before = reading.markup_after, reading.markup_before
    found: list[ProseSentence] = []
    floor = 0
    for plain_start, plain_end in _segments(plain, _language(plain)):
        start = reading.content_start(plain_start)
        end = reading.content_end(plain_end - 1)
        while end in after:
            end = after[end]
        while start in before and before[start] >= floor:
            start = before[start]
        floor = end
        seen = _seen(plain[plain_start:plain_end])
        if not seen:
            continue
        begin, finish = lines.offset(start), lines.offset(end - 1) + 1
        found.append(
            ProseSentence(
                text[begin:finish],
                seen,
                begin,
                finish,
                first_index + len(found),
                number,
                len(found),
                block.section,
            )
        )
    return found
