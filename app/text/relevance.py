"""When a sentence addresses a question or a section title: one rule for every agent.

Research, the writer and the reviewer share it, so what research calls answered the
reviewer can check.

Words are compared by their stems (Snowball, applied until it changes nothing, so
"decipherment" and "deciphering" meet), and Chinese or Japanese by character pairs.

**Answerability.** A question's key terms are weighted by how rare they are in the corpus
(inverse sentence frequency: ``ln(1 + N / (1 + df))`` over the N prose sentences read; a
term the corpus never uses weighs as much as one it uses once). A sentence
*addresses* the question when the terms it shares with the question, counting those of its
section headings and document title as its own, carry at least ``ANSWER_COVERAGE`` of the
question's weight. So "What did von Frisch eat for lunch?" is not answered by a sentence
about von Frisch: "eat" and "lunch" carry most of the question's weight and no sentence
has them. The sentence must also name what the question is about: the question's term
that titles a document and is found in the fewest ("Typer" in "how Typer builds command
line interfaces"),
so a sentence about another tool's command line does not answer it. A question no
sentence addresses stays open.

**The objective** is a topic to explain rather than a question with one answer: it is
also addressed when up to ``TOGETHER`` sentences of one document together carry that share
(sentences of different documents never add up: "colour" in one note and "drones" in
another do not tell the colour of drones).

**Chinese and Japanese questions** have no spaces, so their key terms are the character
pairs inside the words a dictionary segmenter (rjieba) finds, question words such as
哪一年 or 什么 left out: a pair straddling two words is an artefact of the pairing, not a
term a sentence could be missing.

**Section relevance.** A sentence is on topic for a section when it, or its section path,
shares a key term with the section's title.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import rjieba
import snowballstemmer

from app.text.primitives import CJK_RUN, terms
from contracts import Fact, ResearchBundle

ANSWER_COVERAGE = 0.5
"""Share of a question's weight a sentence (with its headings) must carry to address it."""
TOGETHER = 3
"""Sentences of one document that may address the objective together."""
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
    if not term.isascii():
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
    character pairs are terms again.
    """
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


@dataclass(frozen=True)
class Rarity:
    """How rare each key term is among the corpus' prose sentences.

    It also counts the documents (text, headings and title) each term appears in at all.
    """

    sentences: int
    frequency: Counter[str]
    documents: Counter[str] = field(default_factory=Counter)
    titled: frozenset[str] = frozenset()
    """Key terms of the documents' titles: the topics the corpus is about."""
    postings: dict[str, frozenset[int]] = field(default_factory=dict)
    """The sentences (by position) each key term appears in."""

    @classmethod
    def of(
        cls,
        sentence_keys: Iterable[frozenset[str]],
        document_keys: Iterable[frozenset[str]] = (),
        titles: Iterable[frozenset[str]] = (),
    ) -> Rarity:
        """Rarity over these sentences' key terms and these documents' (all their terms)."""
        frequency: Counter[str] = Counter()
        postings: dict[str, set[int]] = {}
        count = 0
        for found in sentence_keys:
            frequency.update(found)
            for key in found:
                postings.setdefault(key, set()).add(count)
            count += 1
        documents: Counter[str] = Counter()
        for found in document_keys:
            documents.update(found)
        frozen = {key: frozenset(where) for key, where in postings.items()}
        return cls(count, frequency, documents, frozenset().union(*titles), frozen)

    def units(self, question: frozenset[str]) -> list[frozenset[str]]:
        """The question's terms, those that always occur together counted as one.

        "von" and "Frisch" name one person; counted twice, a name would outweigh what is
        asked about it ("What was the name of von Frisch's wife?"). Terms found in exactly
        the same sentences are one unit; a term the corpus never uses is its own.
        """
        grouped: dict[frozenset[int], set[str]] = {}
        units: list[frozenset[str]] = []
        for key in sorted(question):
            where = self.postings.get(key)
            if where:
                grouped.setdefault(where, set()).add(key)
            else:
                units.append(frozenset({key}))
        return units + [frozenset(keys) for keys in grouped.values()]

    def anchors(self, question: frozenset[str]) -> frozenset[str]:
        """What the question is about: its title terms found in the fewest documents.

        Of the question's terms that title a document, those in the fewest documents:
        "Describe how Typer builds command line interfaces" is about Typer, which titles one
        document, not about "command line", which many use. A question naming no title's
        term has no anchor.
        """
        present = {
            key: self.documents[key] for key in question & self.titled if self.documents.get(key)
        }
        if not present:
            return frozenset()
        fewest = min(present.values())
        return frozenset(key for key, count in present.items() if count == fewest)

    def weight(self, key: str) -> float:
        """Inverse sentence frequency; an unseen term weighs as a term seen once."""
        seen = max(1, self.frequency.get(key, 0))
        return math.log(1 + self.sentences / (1 + seen))

    def coverage(self, question: frozenset[str], context: frozenset[str]) -> float:
        """Share of the question's weight that the context's terms carry (0 when empty).

        Each unit of terms that always occur together (``units``) weighs as its rarest.
        """
        weighed = [
            (max(self.weight(key) for key in unit), bool(unit & context))
            for unit in self.units(question)
        ]
        total = sum(weight for weight, _ in weighed)
        if total <= 0:
            return 0.0
        return sum(weight for weight, covered in weighed if covered) / total

    def addresses(self, question: frozenset[str], context: frozenset[str]) -> bool:
        """Whether a sentence with this context (its terms and its headings') addresses it.

        It must carry enough of the question's weight, and name what the question is about.
        """
        if not question or self.coverage(question, context) < ANSWER_COVERAGE:
            return False
        anchors = self.anchors(question)
        return not anchors or bool(anchors & context)

    def together(self, question: frozenset[str], contexts: list[frozenset[str]]) -> list[int]:
        """The few sentences (indexes into ``contexts``) that address it together, or none.

        The best ``TOGETHER`` by their own coverage; they address it when the union of
        their terms carries ``ANSWER_COVERAGE`` of its weight and each adds a term.
        """
        order = sorted(
            range(len(contexts)), key=lambda at: (-self.coverage(question, contexts[at]), at)
        )
        chosen: list[int] = []
        covered: frozenset[str] = frozenset()
        for at in order:
            adds = (contexts[at] & question) - covered
            if not adds:
                continue
            chosen.append(at)
            covered |= adds
            if len(chosen) == TOGETHER:
                break
        anchors = self.anchors(question)
        named = not anchors or bool(anchors & covered)
        if bool(question) and named and self.coverage(question, covered) >= ANSWER_COVERAGE:
            return chosen
        return []


def on_topic(title: str, context: frozenset[str]) -> bool:
    """Whether a sentence with this context (its terms and its headings') fits the title."""
    return bool(query_keys(title) & context)


def fact_context(fact: Fact, bundle: ResearchBundle) -> frozenset[str]:
    """A fact's key terms with those of its section path and its source's title."""
    source = bundle.source(fact.source_id)
    return keys(fact.statement) | heading_keys(fact.section, source.title if source else None)


ON_TOPIC_SHARE = 0.5
"""Share of a required section's cited sentences that must cite a fact on its topic."""


def off_topic(title: str, sentences: list[list[str]], bundle: ResearchBundle) -> tuple[int, bool]:
    """How many of a section's sentences cite a fact on its topic, and whether too few.

    ``sentences`` holds each sentence's cited claim ids.
    """
    on = sum(
        any(
            (fact := bundle.fact(claim_id)) is not None
            and on_topic(title, fact_context(fact, bundle))
            for claim_id in ids
        )
        for ids in sentences
    )
    return on, on < ON_TOPIC_SHARE * len(sentences)
