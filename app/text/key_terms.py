"""The key terms of a text, a question or a heading: what the relevance rule compares.

Words are compared by their stems (Snowball, applied until it changes nothing, so
"decipherment" and "deciphering" meet), and Chinese or Japanese by character pairs.

**Chinese and Japanese questions** have no spaces, so their key terms are the character
pairs inside the words a dictionary segmenter (rjieba) finds, question words such as
哪一年 or 什么 left out: a pair straddling two words is an artefact of the pairing, not a
term a sentence could be missing. A question's opening imperative ("Describe…"), its
quantity word ("how far…") and an aspect word ("the life of…") are the asking, not terms.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable
from typing import Any

import snowballstemmer

from app.text.primitives import CJK_RUN, terms

CJK_QUESTION_WORDS = frozenset(
    """哪 哪些 哪个 哪一 哪一年 哪年 哪里 哪儿 什么 如何 怎样 怎么 为什么 为何 何时 何地 何人 谁
    多少 几 是 的 了 在 和 与 及 把 被 给 用 对 从 到 于 吗 呢 啊 请 介绍 说明 解释 描述 简述
    讲述 一 这 那 有 其 之 中 并 又 也 都 由 以 而 或 等 各 该 此 哪些是 时候 什么样
    説明 紹介 解説 何 誰 いつ どこ なぜ どう""".split()
)
"""Words of a Chinese question that ask rather than name what is asked about."""
ASPECT_WORDS = frozenset(
    """history life biography background overview role development story career legacy
    length duration size number amount count name year date place reason
    生平 经历 历史 概况 简介 背景 发展 作用 意义 由来
    名字 朝代 年代 时间 时候 地点 地方 原因 数量""".split()
)
"""Words that say what kind of account or answer is wanted ("the life of…", "the length
of…", "…的生平"), not a term the corpus must use: left out of a question's key terms when
others remain."""


_LOCAL = threading.local()


def _stemmer() -> Any:
    """A stemmer of the calling thread's own.

    A Snowball stemmer keeps its state in itself while it works, so two threads (a worker
    runs several) must not share one.
    """
    found = getattr(_LOCAL, "stemmer", None)
    if found is None:
        found = _LOCAL.stemmer = snowballstemmer.stemmer("english")
    return found


@functools.lru_cache(maxsize=65536)
def stem(term: str) -> str:
    """The term's stem; Snowball again until it is stable (its output is not always a fixpoint)."""
    if not term.isascii() or term.isdigit():  # Snowball leaves both as they are
        return term
    stemmer = _stemmer()
    for _ in range(3):
        shorter: str = stemmer.stemWord(term)
        if shorter == term:
            break
        term = shorter
    return term


@functools.lru_cache(maxsize=16384)
def keys(text: str) -> frozenset[str]:
    """The stems of a text's content terms: the unit every relevance test compares."""
    return frozenset(stem(term) for term in terms(text))


TASK_VERBS = frozenset(
    """analyse analyze compare cover define describe detail discuss document explain give
    identify introduce list outline present report review show state summarise summarize
    tell trace write""".split()
)
"""Imperatives that open a task ("Document how…", "Summarise what…"): the asking, not a
term an answer must contain."""
_CONTROL = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: ESC ] … BEL or ST
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI, 7- and 8-bit
    r"|[\x00-\x1f\x7f-\x9f]"  # any other control character
)
"""Terminal escape sequences and control characters: never words of a question."""
_HOW_MUCH = re.compile(
    r"\bhow\s+(?:many|much|often|far|long|old|big|large|small|soon|fast|high|tall|wide)\b",
    re.IGNORECASE,
)
""""How long…", "how far…": the kind of answer asked for (a length, a distance), which the
answer states as a number, not as the word."""
_OPENING_WORD = re.compile(r"\s*([A-Za-z]+)\b")


@functools.lru_cache(maxsize=1024)
def query_keys(text: str) -> frozenset[str]:
    """The key terms of a question or a title: ``keys``, Chinese pairs only within words.

    An opening imperative ("Document how ferrule handles failures") and the quantity word
    of "how long", "how far" and the like are not key terms.
    """
    text = _HOW_MUCH.sub(" ", _CONTROL.sub(" ", text))
    opening = _OPENING_WORD.match(text)
    if opening and opening.group(1).casefold() in TASK_VERBS:
        text = text[opening.end() :]
    latin = CJK_RUN.sub(" ", text)
    named = [term for term in terms(latin)]
    words = [word for run in CJK_RUN.findall(text) for word in _words(run)]
    words = [word for word in words if word not in CJK_QUESTION_WORDS]
    aspects = [item for item in (*named, *words) if item in ASPECT_WORDS]
    if len(aspects) < len(named) + len(words):
        named = [term for term in named if term not in ASPECT_WORDS]
        words = [word for word in words if word not in ASPECT_WORDS]
    found = {stem(term) for term in named}
    for word in words:  # a one-character word (a particle, mostly) is no term
        found.update(word[at : at + 2] for at in range(len(word) - 1))
    return frozenset(found)


_KANA = re.compile(r"[\u3041-\u3096]+")
"""Hiragana: in Japanese the grammar between words (について, してください), not a word."""


def _words(run: str) -> list[str]:
    """Dictionary words of a CJK run, single characters joined.

    A name the dictionary does not know comes out one character at a time; joined, its
    character pairs are terms again. The segmenter is imported on the first CJK run: its
    dictionary takes half a second to load, which every command would pay at start.
    """
    import rjieba

    if _KANA.search(run):  # Japanese: the words are what the hiragana leave between them
        return [word for word in _KANA.split(run) if word]
    words: list[str] = []
    single = ""
    for word in rjieba.cut(run):
        if len(word) == 1 and word not in CJK_QUESTION_WORDS:
            single += word
            continue
        if single:
            words.append(single)
            single = ""
        words.append(word)
    if single:
        words.append(single)
    return words


def heading_keys(section: Iterable[str], title: str | None = None) -> frozenset[str]:
    """The key terms of a heading path and a document title."""
    found: set[str] = set()
    for heading in (*section, *([title] if title else [])):
        found |= keys(heading)
    return frozenset(found)
