"""Which sentence segmenter research uses: sentencex or pysbd, measured on our own text.

``python -m bench.sentence_segmenters`` (pysbd is not a project dependency; install it
with ``pip install pysbd`` to see its column, else it is reported as missing).

For each segmenter, on three sets whose right answer is known:

- corpus: the prose paragraphs of the bundled corpus (``examples/corpus/*.md``). Its
  sentences all end in ``.``/``!``/``?`` followed by a space and a capital, with no
  abbreviations, so the right boundaries are exactly those.
- chinese: a paragraph ending sentences in 。！？, with 「」 quotes both inside a sentence and
  closing one (a stop inside 」 ends the sentence), and a mid-sentence ……
- abbreviations: e.g., i.e., Dr., Mr., St., 3.5, v1.2.3, U.S., etc. in mid-sentence, an
  ellipsis, quotes and brackets after a full stop.
- layout: hard-wrapped lines, runs of spaces, a tab, repeated sentences, no final stop.

it reports sentences found (expected), wrong splits (a boundary where there is none),
missed splits (two sentences left as one), whether every span is the exact source text at
its offsets and no non-space character is lost, and the time per 100 KB of English prose
segmented paragraph by paragraph, the way ``app.text.documents`` calls it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench._common import print_table

Spans = list[tuple[int, int]]
Segment = Callable[[str, str], Spans]

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "corpus"
_CORPUS_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")

CHINESE = [
    "罗塞塔石碑是一块刻有三种文字的石碑。",
    "它于一七九九年在埃及被法国士兵发现！",
    "碑文用「圣书体」、「世俗体」和古希腊文写成。",
    "为什么古希腊文如此重要？",
    "因为学者们能够读懂它。",
    "学者们争论了二十年……直到商博良出现。",
    "商博良在一八二二年宣布：「我找到了！」",
    "据说他随即晕倒了。",
    "杨格写道：「这些符号代表声音。」",
    "后来的研究证实了这一点。",
]
"""Expected sentences; the paragraph is their concatenation (no spaces in Chinese)."""

ABBREVIATIONS = [
    ["Many scripts, e.g. demotic and hieratic, were written with a brush.", "They were fast."],
    ["Some scripts, e.g. Demotic, were cursive.", "They were faster to write."],
    ["The middle text, i.e. the demotic one, was the longest.", "It was read first."],
    ["Dr. Young compared the three texts.", "He found the name of Ptolemy."],
    ["Mr. Bankes brought the obelisk to Kingston Lacy.", "Its cartouches helped."],
    ["A copy was sent to St. Petersburg in 1823.", "It arrived in spring."],
    ["The slab is 3.5 feet wide and 0.28 metres thick.", "It is broken."],
    ["The catalogue moved to v1.2.3 last year.", "Nobody noticed."],
    ["The stone toured the U.S. and Canada in 1972.", "Crowds came."],
    ["Papyri, ostraca, stelae, etc. were all studied.", "Many survive."],
    ["He hesitated... then read the name aloud.", "It was Ptolemy."],
    ['He wrote, "The key is Coptic."', "Nobody believed him."],
    ["He called it 'the key.'", "Others disagreed."],
    ["(The letter is lost.)", "Copies survive."],
    ["See Fig. 2 and p. 14 for the cartouche.", "It is clear."],
    ["The stone arrived in Feb. 1802 with Gen. Turner.", "It went on show."],
    ["Brown et al. disagree with this view.", "We agree."],
    ["It was found in 1799 by French soldiers.", "They were rebuilding a fort."],
]
"""Cases of expected sentences; each case's text is its sentences joined by a space."""

LAYOUT = [
    ("Yes. No. Yes. No.", ["Yes.", "No.", "Yes.", "No."]),
    (
        "It was found in 1799\nby French soldiers.  They were\n"
        "  rebuilding a fort.\tAnd then\nno stop",
        [
            "It was found in 1799\nby French soldiers.",
            "They were\n  rebuilding a fort.",
            "And then\nno stop",
        ],
    ),
]
"""Hard-wrapped lines, runs of spaces, a tab, repeated sentences, no final stop."""


@dataclass(frozen=True)
class Score:
    """One segmenter on one set of texts."""

    found: int
    expected: int
    wrong: int
    missed: int
    exact: bool


def sentencex_segmenter() -> Segment:
    """Character offsets straight from ``get_sentence_boundaries``."""
    import sentencex

    def segment(text: str, language: str) -> Spans:
        return [
            (int(b["start_index"]), int(b["end_index"]))
            for b in sentencex.get_sentence_boundaries(language, text)
        ]

    return segment


def sentencex_cursor_segmenter() -> Segment:
    """``segment`` returns strings only: each is found in the text from a cursor."""
    import sentencex

    def segment(text: str, language: str) -> Spans:
        spans: Spans = []
        cursor = 0
        for sentence in sentencex.segment(language, text):
            start = text.find(sentence, cursor)
            if start < 0:  # the library changed the text: keep what can be found
                continue
            spans.append((start, start + len(sentence)))
            cursor = start + len(sentence)
        return spans

    return segment


def pysbd_segmenter() -> Segment:
    """``char_span=True`` spans; one Segmenter per language, as building one is cheap."""
    import pysbd
    from pysbd.languages import LANGUAGE_CODES

    segmenters: dict[str, pysbd.Segmenter] = {}

    def segment(text: str, language: str) -> Spans:
        code = language if language in LANGUAGE_CODES else "en"
        if code not in segmenters:
            segmenters[code] = pysbd.Segmenter(language=code, clean=False, char_span=True)
        return [(span.start, span.end) for span in segmenters[code].segment(text)]

    return segment


def segmenters() -> dict[str, Segment | str]:
    """Each candidate, or why it cannot run here."""
    found: dict[str, Segment | str] = {}
    for name, factory in (
        ("sentencex", sentencex_segmenter),
        ("sentencex (cursor)", sentencex_cursor_segmenter),
        ("pysbd", pysbd_segmenter),
    ):
        try:
            found[name] = factory()
        except ImportError:
            found[name] = "not installed"
    return found


def corpus_paragraphs() -> list[str]:
    """The prose paragraphs of the bundled corpus: blank-line blocks that are not headings."""
    paragraphs: list[str] = []
    for path in sorted(CORPUS.glob("*.md")):
        blocks = path.read_text(encoding="utf-8").split("\n\n")
        paragraphs += [block.strip() for block in blocks if block.strip()[:1] not in ("#", "")]
    return paragraphs


def cases() -> dict[str, list[tuple[str, str, list[str]]]]:
    """Each set as (text, language, expected sentences)."""
    corpus = [(text, "en", _CORPUS_BOUNDARY.split(text)) for text in corpus_paragraphs()]
    return {
        "corpus": corpus,
        "chinese": [("".join(CHINESE), "zh", CHINESE)],
        "abbreviations": [(" ".join(case), "en", case) for case in ABBREVIATIONS],
        "layout": [(text, "en", sentences) for text, sentences in LAYOUT],
    }


def _ends(text: str, sentences: Sequence[str]) -> set[int]:
    """Where each sentence but the last ends in the text."""
    ends: set[int] = set()
    cursor = 0
    for sentence in sentences[:-1]:
        cursor = text.index(sentence, cursor) + len(sentence)
        ends.add(cursor)
    return ends


def score(segment: Segment, texts: list[tuple[str, str, list[str]]]) -> Score:
    """Count sentences and boundary errors; check the spans against the source."""
    found = expected = wrong = missed = 0
    exact = True
    for text, language, sentences in texts:
        spans = segment(text, language)
        stripped = [
            (s + len(text[s:e]) - len(text[s:e].lstrip()), s + len(text[s:e].rstrip()))
            for s, e in spans
        ]
        stripped = [(s, e) for s, e in stripped if s < e]
        covered = "".join(text[s:e] for s, e in stripped)
        exact &= "".join(covered.split()) == "".join(text.split())
        exact &= all(0 <= s < e <= len(text) for s, e in stripped)
        predicted = {e for _, e in stripped[:-1]}
        truth = _ends(text, sentences)
        found += len(stripped)
        expected += len(sentences)
        wrong += len(predicted - truth)
        missed += len(truth - predicted)
    return Score(found, expected, wrong, missed, exact)


def english_prose(size: int = 100_000) -> list[str]:
    """Corpus paragraphs repeated to ``size`` characters."""
    paragraphs = corpus_paragraphs()
    out: list[str] = []
    while sum(map(len, out)) < size:
        out += paragraphs
    return out


def per_100kb(segment: Segment, repeats: int = 3) -> float:
    """Best-of-N milliseconds to segment 100 KB of English prose, paragraph by paragraph."""
    paragraphs = english_prose()
    total = sum(map(len, paragraphs))
    segment(paragraphs[0], "en")  # warm-up (pysbd compiles its rules on first use)
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        for paragraph in paragraphs:
            segment(paragraph, "en")
        best = min(best, time.perf_counter() - began)
    return best * 1000 * 100_000 / total


def documents_timing(repeats: int = 50) -> tuple[float, int]:
    """Best-of-N milliseconds for ``read_document`` on every bundled file, and sentences."""
    from app.text.documents import read_document

    texts = [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*.md"))]
    for text in texts:
        read_document(text)
    best = float("inf")
    count = 0
    for _ in range(repeats):
        began = time.perf_counter()
        count = sum(len(read_document(text).sentences) for text in texts)
        best = min(best, time.perf_counter() - began)
    return best * 1000, count


def main(argv: Sequence[str] | None = None) -> None:
    """Print the comparison table, then the cost of reading the bundled corpus."""
    sets = cases()
    rows: list[list[str]] = []
    for name, segment in segmenters().items():
        if isinstance(segment, str):
            rows.append([name, segment] + [""] * (len(sets) + 1))
            continue
        cells = [name]
        all_exact = True
        for texts in sets.values():
            result = score(segment, texts)
            all_exact &= result.exact
            cells.append(f"{result.found}/{result.expected} +{result.wrong} -{result.missed}")
        cells += ["yes" if all_exact else "NO", f"{per_100kb(segment):.2f}"]
        rows.append(cells)
    print_table(
        "Sentence segmenters: found/expected +wrong splits -missed splits",
        ["segmenter", *sets, "exact spans", "ms/100 KB"],
        rows,
    )
    milliseconds, count = documents_timing()
    files = len(list(CORPUS.glob("*.md")))
    print(
        f"\napp.documents.read_document on the {files} bundled files: "
        f"{milliseconds:.2f} ms (best of 50, warm), {count} prose sentences"
    )


if __name__ == "__main__":
    main()
