"""What kind of answer a question asks for, and whether a sentence holds one of that kind.

"How many copies were sold?", "In which year was it released?", "Who wrote it?" are about
a subject the corpus may well name; a sentence about that subject with no number, year or
person in it does not answer them, however many of the question's terms it shares. So a
question that asks for a **number**, a **year** or another **date**, a **person** or a
**place** is addressed only by a sentence that holds one (research applies it where it
ranks what addresses a question, ``app/agents/ranking.py``); otherwise it stays open. A
yes/no question is recognised too ("Does kestrel need Redis?"): any sentence that
addresses it affirms or denies it, so its kind asks nothing more.

What counts, kind by kind:

- a number: a digit or a number word that the question does not already hold ("one" in
  "How many buckets can one process hold?" is the question's, not an answer); a question
  after a bound ("at most", "the largest") wants a sentence stating one ("up to", "no more
  than", "limit");
- a year: a year written out (``1799``, ``794年``, ``一二八二年``), not a century or a decade;
  a date ("when"): any of those, a month, a century, a decade or a period ("the Ming
  dynasty", "春秋战国时期");
- a person: a name, a capitalised word the question does not hold that is no function word
  and does not belong to an institution's or a place's name ("the British Museum");
  sentences in Chinese or Japanese pass, as names there are not marked;
- a place: a name, a location phrase ("in", "near", "under" …) or a file path.

The tests are lenient: they keep out the sentence that plainly lacks the kind, never judge
which of two holds it better.
"""

from __future__ import annotations

import re
from enum import Enum

from app.text.antecedents import OPENING_WORDS
from app.text.key_terms import TASK_VERBS, keys


class AnswerType(Enum):
    """The kind of answer a question asks for."""

    NUMBER = "number"
    YEAR = "year"
    DATE = "date"
    PERSON = "person"
    PLACE = "place"
    YES_NO = "yes/no"


_ASKS = (
    (
        AnswerType.YEAR,
        re.compile(
            r"\b(?:(?:in\s+)?(?:what|which)\s+year|since\s+what\s+year)\b|哪一?年|何年|几几年",
            re.IGNORECASE,
        ),
    ),
    (
        AnswerType.DATE,
        re.compile(
            r"\b(?:when|since\s+when|(?:in|on)\s+(?:what|which)\s+(?:decade|century|date|month)"
            r"|what\s+(?:date|decade|century|month))\b|何时|什么时候|几月|哪天|いつ",
            re.IGNORECASE,
        ),
    ),
    (
        AnswerType.NUMBER,
        re.compile(
            r"\b(?:(?:for\s+)?how\s+(?:many|much|long|far|old|often|big|large|heavy|tall|wide"
            r"|high|fast)|what\s+(?:number|percentage|share|proportion|size|length|amount)"
            r"|what\s+is\s+the\s+(?:largest|smallest|maximum|minimum|highest|lowest|longest"
            r"|shortest|most|least|number|size)|which\s+(?:number|port|version))\b"
            r"|多少|几[个种次年岁位名台条]|多[大长久远重高]|いくつ|何[人個回]",
            re.IGNORECASE,
        ),
    ),
    (
        AnswerType.PERSON,
        re.compile(
            r"\b(?:who|whom|whose|by\s+whom|which\s+(?:person|people|scholar|author))\b|谁|何人|誰",
            re.IGNORECASE,
        ),
    ),
    (
        AnswerType.PLACE,
        re.compile(
            r"\b(?:where|in\s+which\s+(?:country|city|town|place))\b|哪里|哪儿|何地|どこ", re.I
        ),
    ),
    (
        AnswerType.YES_NO,
        re.compile(
            r"^\W*(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had|may"
            r"|must)\b|吗[？?]?\s*$|是否",
            re.IGNORECASE,
        ),
    ),
)
_OPENING = re.compile(r"\W*([A-Za-z]+)")
_WH = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)

_NUMBER = re.compile(
    r"\d+(?:[.,]\d+)*|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty"
    r"|fifty|sixty|seventy|eighty|ninety|hundreds?|thousands?|millions?|billions?|dozens?"
    r"|half|twice|once|double|triple)\b|[一二两三四五六七八九十百千万亿〇零半]+",
    re.IGNORECASE,
)
_BOUND_ASKED = re.compile(
    r"\b(?:at\s+most|at\s+least|maximum|minimum|largest|smallest|biggest|highest|lowest"
    r"|longest|shortest|limit)\b|最多|最少|最大|最小|上限|下限",
    re.IGNORECASE,
)
_BOUND_STATED = re.compile(
    r"\b(?:at\s+most|at\s+least|up\s+to|no\s+more\s+than|no\s+fewer\s+than|not\s+more\s+than"
    r"|maximum|minimum|max|min|limit(?:s|ed)?|largest|smallest|biggest|highest|lowest"
    r"|longest|shortest|ceiling|cap(?:ped)?|never\s+(?:more|longer|larger|fewer)|exceeds?)\b"
    r"|最多|最少|最大|最小|上限|下限|不超过|至多|至少",
    re.IGNORECASE,
)
_YEAR = re.compile(
    r"(?<!\d)(?:1\d{3}|20\d{2})(?!\d)(?!s)|\d{3,4}\s*年|[一二三四五六七八九〇零]{3,4}\s*年"
)
_DATE = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|century|centuries|decade|\d{3,4}s|\d+(?:st|nd|rd|th)\s+century|period|era"
    r"|dynasty|reign|age)\b|世纪|时期|时代|年代|年间|[夏商周秦汉晋隋唐宋元明清]朝"
    r"|[\d一二三四五六七八九十]+\s*月",
    re.IGNORECASE,
)
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?:[-'][A-Za-z]+)*\b|\b[A-Z]\.")
_NOT_NAMES = OPENING_WORDS | frozenset("every last many one two".split())
"""Capitalised at a sentence's start, still no name: the words a sentence opens with."""
_INSTITUTION = frozenset(
    """museum university college institute institution society library company corporation
    foundation academy school press office ministry department government church army navy
    party council committee agency bank inc ltd group team project city river sea ocean
    street road kingdom republic empire state states war island mountains valley""".split()
)
_HAN = re.compile(r"[\u3400-\u9fff]")
_PLACE = re.compile(
    r"\b(?:in|at|near|from|inside|under|beside|between|across|into|on|to)\s+\S"
    r"|[\w.-]+/[\w./-]*|~/|\b[\w-]+\.(?:toml|ini|json|ya?ml|cfg|conf|db|log|txt)\b"
    r"|[在于从到]",
    re.IGNORECASE,
)


def asked_type(question: str) -> AnswerType | None:
    """The kind of answer ``question`` asks for, or None when it asks for an explanation.

    A task ("Explain how large a bucket is") asks for an explanation. Otherwise the kind is
    that of the question's first wh-phrase ("In which year…", "For how much…",
    "Who…"): "Which environment variable sets how many times a task may run?" asks for a
    variable, not a number. A question without one (Chinese, Japanese) asks the first
    kind it names; a yes/no question opens with its verb.
    """
    opening = _OPENING.match(question)
    if opening and opening.group(1).casefold() in TASK_VERBS:
        return None  # "Explain how large a bucket is": a topic to explain, not a number
    first = _WH.search(question)
    for kind, pattern in _ASKS:
        for match in pattern.finditer(question):
            if first is None or kind is AnswerType.YES_NO:
                return kind
            if match.start() <= first.start() < match.end():
                return kind
    return None


_DEFINITION = re.compile(
    r"\W*(?:(?:an?|the)\s+)?([^\W\d][\w.-]*(?:\s+[\w.-]+){0,3}?)\s+(?:is|are|was|were)"
    r"\s+(?:an?|the|one)\s",
    re.IGNORECASE,
)
_HAN_DEFINITION = re.compile(
    r"\W*([\u4e00-\u9fff]{1,8}?)(?<![于但可要若或凡总而老不还就])(?:是|は)"
)
"""A Chinese or Japanese sentence opening with what it defines: "蔡伦是东汉时期的宦官", not
one whose 是 ends a conjunction or an adverb ("蔡伦于是改进…": "and so")."""
_ASKS_WHAT = re.compile(
    r"\W*(?:what\s+(?:is|are|was|were|does|do)|who\s+(?:is|was|were)|describe|summari[sz]e"
    r"|explain\s+what|introduce)\b",
    re.IGNORECASE,
)


def defined(sentence: str) -> frozenset[str]:
    """The key terms of what ``sentence`` says a thing is ("A ferrule worker is a …").

    Empty when it defines nothing: a definition answers "what is" and "describe what",
    and an article explaining a subject says what the subject is first.
    """
    subject = _DEFINITION.match(sentence) or _HAN_DEFINITION.match(sentence)
    return keys(subject.group(1)) if subject else frozenset()


def asks_what(question: str) -> bool:
    """Whether a question asks what its subject is or does, which a definition answers."""
    return bool(_ASKS_WHAT.match(question))


def holds(kind: AnswerType | None, sentence: str, question: str = "") -> bool:
    """Whether ``sentence`` holds an answer of ``kind`` to ``question`` (see the module)."""
    if kind is None or kind is AnswerType.YES_NO:
        return True
    if kind is AnswerType.NUMBER:
        asked = {match.group().casefold() for match in _NUMBER.finditer(question)}
        numbers = [m for m in _NUMBER.finditer(sentence) if m.group().casefold() not in asked]
        bound = not _BOUND_ASKED.search(question) or bool(_BOUND_STATED.search(sentence))
        return bool(numbers) and bound
    if kind is AnswerType.YEAR:
        return bool(_YEAR.search(sentence))
    if kind is AnswerType.DATE:
        return bool(_YEAR.search(sentence) or _DATE.search(sentence))
    if kind is AnswerType.PERSON:
        return bool(_HAN.search(sentence)) or _names(sentence, question)
    return bool(_PLACE.search(sentence)) or _names(sentence, question)


def _names(sentence: str, question: str) -> bool:
    """Whether the sentence has a name the question does not.

    A capitalised word that is no function word, in no run of capitalised words ending in
    an institution's or a place's word.
    """
    asked = {word.casefold() for word in re.findall(r"\w+", question)}
    words = list(_CAPITALISED.finditer(sentence))
    for at, match in enumerate(words):
        word = match.group().casefold()
        if word in asked or word in _NOT_NAMES or word in _INSTITUTION:
            continue
        run_end = at
        while run_end + 1 < len(words) and sentence[
            words[run_end].end() : words[run_end + 1].start()
        ] in (" ", "-"):
            run_end += 1
        if words[run_end].group().casefold() not in _INSTITUTION:
            return True
    return False
