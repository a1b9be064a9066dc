"""Whether a sentence leans on an earlier one: a pronoun whose referent it never names.

"In the 1940s he showed that a forager…" cannot open a paragraph of the article: the reader
never learns who "he" is. Such a sentence is used only after the sentence of its own
paragraph that it leans on (see ``Fact.leans_on``), or not at all.

The rule, deliberately simple and the same for every agent:

- a sentence whose first word is a pronoun or a demonstrative (He, She, It, They, This,
  These, Those, That, Such, His, Her, Its, Their, Both, the former/latter, or in Chinese
  他, 她, 它, 其, 这, 此, 该, 那) leans on the sentence before it;
- so does one whose subject, after an opening phrase, is a bare demonstrative ("In version
  2 this was required …");
- so does one that uses a singular personal pronoun (he, she, him, his, her) and names no
  one: no capitalised word but its first, and that one a common opening word ("In the
  1940s he showed…"), not a name ("Wenner did not deny…, but he claimed…").
"""

from __future__ import annotations

import re

from app.text.primitives import STOPWORDS

_OPENERS = frozenset(
    "he she it they this these those that such his her its their him them both".split()
)
_PHRASES = ("the former", "the latter", "the same")
_PERSONAL = re.compile(r"\b(?:he|she|him|his|her|himself|herself)\b", re.IGNORECASE)
_CJK_OPENERS = ("他", "她", "它", "其", "这", "此", "该", "那", "這", "該")
_FIRST_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
OPENING_WORDS = STOPWORDS | frozenset(
    """after afterwards also although before by during early eventually finally first
    however in instead late later meanwhile next now once since soon still then there
    therefore though thus today when while yet""".split()
)
"""Words a sentence may open with that are not a name."""
_NAME = re.compile(r"(?<![\w'’])[A-Z][\w'’-]*")


_DEMONSTRATIVE_SUBJECT = re.compile(
    r"(?:[^,;:.]{1,40}?\s)?(?:this|these|those)\s+(?:was|is|were|are|has|have|had|can|could"
    r"|will|would|may|must|does|did|do|became|becomes|remains?|remained)\b",
    re.IGNORECASE,
)
"""A demonstrative standing as the subject after an opening phrase: "In version 2 this was
required …", where "this" is something an earlier sentence named."""


def leans_on_earlier(sentence: str) -> bool:
    """Whether the sentence needs the one before it to be understood."""
    text = sentence.lstrip(" \t\n\"'“‘(*_[")
    if text.startswith(_CJK_OPENERS):
        return True
    if _DEMONSTRATIVE_SUBJECT.match(text):
        return True
    if text.casefold().startswith(_PHRASES):
        return True
    first = _FIRST_WORD.match(text)
    if first is None:
        return False
    word = re.split(r"['’]", first.group(0).casefold())[0]  # "It's" opens with "it"
    if word in _OPENERS:
        return True
    if _PERSONAL.search(text) is None:
        return False
    if word not in OPENING_WORDS:
        return False  # the sentence opens with a name
    return not any(_NAME.finditer(text, first.end()))
