"""Gold answers: where each question's answer stands in its corpus, and how much an article found.

A case names, per answerable question (and per covered required section), the file and the
sentence of its corpus that answers it: inline as ``gold``, or in ``evidence.json`` beside the
cases file. From that, for an article and for the baseline a user would try first:

- **answer recall**: the share of a case's answerable questions whose gold sentence is cited.
  A cited fact stands for the corpus sentence its span lies in; that sentence *is* the gold
  one when, letters and digits alone compared, one holds the other and is at least half its
  length (a reader's text and a parser's may differ in markup, spacing and where a sentence
  ends).
- **precision**: the share of the corpus sentences cited that belong to some question's
  relevant set. A question's relevant set is the section of its source file that holds its
  gold sentence (the prose under the same heading path): the part of the corpus that is about
  what was asked. Sentences on a required section's gold count too. Anything else cited is
  off what the case asks, however true.
- **baseline**: BM25 over the corpus's prose sentences (stems, as research indexes them),
  each question ranked on its own and their best sentences taken in turn, up to the same
  word limit (the case's, else the article's length): the top-k sentences a user would try.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

import bm25s
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from app.corpus.reading import CORPUS_SUFFIXES
from app.text.documents import Document, ProseSentence, read_document
from app.text.key_terms import keys, query_keys
from contracts import ResearchBundle
from graphs.markdown import word_count

EVIDENCE_FILE = "evidence.json"
"""The gold answers of a cases file, beside it: per case id, per question, its passages."""

Located = tuple[str, int]
"""A corpus sentence: its file (relative to the corpus, with ``/``) and its index there."""


class GoldPassage(BaseModel):
    """A passage that answers a question: a file of the corpus and its sentence as read."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1, description="Relative to the case's corpus folder.")
    sentence: str = Field(min_length=3, description="As a reader sees it, markup left out.")
    example: str | None = Field(default=None, description="The code example it introduces.")


Gold = dict[str, list[GoldPassage]]
"""Per question (its text, exactly as the case asks it) or required section title."""

_EVIDENCE = TypeAdapter(dict[str, dict[str, GoldPassage | list[GoldPassage]]])


def read_evidence(path: Path) -> dict[str, Gold]:
    """The gold answers of ``path``'s folder's ``evidence.json``, by case id; {} without one.

    Raises ValueError naming the case, the question and the field that is wrong.
    """
    evidence = path.parent / EVIDENCE_FILE
    if not evidence.is_file():
        return {}
    try:
        raw = json.loads(evidence.read_text(encoding="utf-8"))
        parsed = _EVIDENCE.validate_python(raw)
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"cannot read gold answers {evidence}: {error}") from error
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"] if part not in _UNION_ARMS)
        raise ValueError(f"{evidence}: field {where}: {first['msg']}") from None
    return {
        case_id: {key: entry if isinstance(entry, list) else [entry] for key, entry in gold.items()}
        for case_id, gold in parsed.items()
    }


_UNION_ARMS = {"GoldPassage", "list[GoldPassage]"}


def _letters(text: str) -> str:
    return "".join(character for character in text.casefold() if character.isalnum())


def same_sentence(one: str, other: str) -> bool:
    """Whether two texts are one sentence as read two ways (see the module docstring)."""
    short, long = sorted((_letters(one), _letters(other)), key=len)
    return bool(short) and short in long and 2 * len(short) >= len(long)


@dataclass(frozen=True)
class CorpusText:
    """A corpus folder read as research reads it: each document's prose sentences."""

    folder: Path
    documents: dict[str, Document]

    @classmethod
    def read(cls, folder: Path) -> CorpusText:
        """Every document of the folder with a corpus suffix, read as its media type says."""
        documents = {
            path.relative_to(folder).as_posix(): read_document(
                path.read_text(encoding="utf-8"), CORPUS_SUFFIXES[path.suffix.lower()]
            )
            for path in sorted(folder.rglob("*"))
            if path.is_file() and path.suffix.lower() in CORPUS_SUFFIXES
        }
        return cls(folder, documents)

    def sentences(self) -> list[tuple[Located, ProseSentence]]:
        """Every prose sentence of the corpus, file by file, where it stands."""
        return [
            ((name, number), sentence)
            for name, document in self.documents.items()
            for number, sentence in enumerate(document.sentences)
        ]

    def sentence(self, where: Located) -> ProseSentence:
        """The prose sentence standing at ``where``."""
        return self.documents[where[0]].sentences[where[1]]

    def find(self, passage: GoldPassage) -> list[Located]:
        """The corpus sentences that are ``passage``'s sentence; [] if its file has none."""
        document = self.documents.get(passage.file)
        if document is None:
            return []
        return [
            (passage.file, number)
            for number, sentence in enumerate(document.sentences)
            if same_sentence(sentence.plain, passage.sentence)
        ]

    def cited(self, bundle: ResearchBundle, claim_ids: Iterable[str]) -> list[Located]:
        """The corpus sentences the cited facts quote, each once, in citation order."""
        found: list[Located] = []
        for claim_id in claim_ids:
            fact = bundle.fact(claim_id)
            source = bundle.source(fact.source_id) if fact else None
            if fact is None or source is None:
                continue
            name = self._name(source.uri)
            document = self.documents.get(name) if name else None
            if name is None or document is None:
                continue
            for number, sentence in enumerate(document.sentences):
                if sentence.start <= fact.span.start < sentence.end:
                    if (name, number) not in found:
                        found.append((name, number))
                    break
        return found

    def _name(self, uri: str) -> str | None:
        path = Path(unquote(urlparse(uri).path)) if uri.startswith("file:") else Path(uri)
        try:
            return path.resolve().relative_to(self.folder.resolve()).as_posix()
        except ValueError:
            return None


@dataclass
class Answers:
    """What one article (or the baseline's sentences) gave of a case's gold answers."""

    answered: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    relevant: int = 0
    cited: int = 0

    @property
    def answerable(self) -> int:
        """Questions with a gold answer: answered or missed."""
        return len(self.answered) + len(self.missed)

    @property
    def recall(self) -> float:
        """Answered ÷ answerable (1.0 when nothing is answerable: nothing was missed)."""
        return len(self.answered) / self.answerable if self.answerable else 1.0

    @property
    def precision(self) -> float:
        """Cited sentences in a relevant set ÷ sentences cited (0.0 when nothing is cited)."""
        return self.relevant / self.cited if self.cited else 0.0


@dataclass(frozen=True)
class GoldIndex:
    """A case's gold answers located in its corpus: each question's sentences, and sections."""

    corpus: CorpusText
    answers: dict[str, list[Located]]
    """Per answerable question: the corpus sentences that answer it."""
    relevant: frozenset[tuple[str, tuple[str, ...]]]
    """The (file, heading path) of every gold sentence: the relevant sets, together."""

    @classmethod
    def of(cls, corpus: CorpusText, gold: Gold, questions: list[str]) -> GoldIndex:
        """Raises ValueError naming the question whose gold sentence the corpus lacks."""
        located: dict[str, list[Located]] = {}
        for key, passages in gold.items():
            for passage in passages:
                found = corpus.find(passage)
                if not found:
                    raise ValueError(
                        f"gold answer of {key!r}: no sentence of {passage.file!r} in "
                        f"{corpus.folder.name} reads {passage.sentence[:80]!r}"
                    )
                located.setdefault(key, []).extend(found)
        relevant = frozenset(
            (where[0], corpus.sentence(where).section)
            for sentences in located.values()
            for where in sentences
        )
        answers = {question: located[question] for question in questions if question in located}
        return cls(corpus, answers, relevant)

    def measure(self, cited: list[Located]) -> Answers:
        """What ``cited`` corpus sentences answer, and how many are on what was asked."""
        chosen = set(cited)
        result = Answers(cited=len(chosen))
        for question, sentences in self.answers.items():
            (result.answered if chosen & set(sentences) else result.missed).append(question)
        result.relevant = sum(
            (where[0], self.corpus.sentence(where).section) in self.relevant for where in chosen
        )
        return result


def baseline(corpus: CorpusText, questions: list[str], max_words: int) -> list[Located]:
    """The top BM25 sentences for the questions, in turns, up to ``max_words`` words."""
    sentences = corpus.sentences()
    if not sentences or max_words <= 0:
        return []
    retriever = bm25s.BM25()
    retriever.index(
        [sorted(keys(sentence.plain)) or ["\x00"] for _, sentence in sentences],
        show_progress=False,
    )
    rankings = []
    for question in questions:
        query = sorted(query_keys(question))
        scores = np.asarray(retriever.get_scores(query)) if query else np.zeros(len(sentences))
        scored = np.flatnonzero(scores > 0)
        rankings.append(scored[np.lexsort((scored, -scores[scored]))].tolist())
    chosen: list[Located] = []
    words = 0
    for turn in range(max((len(ranking) for ranking in rankings), default=0)):
        for ranking in rankings:
            if turn >= len(ranking) or sentences[ranking[turn]][0] in chosen:
                continue
            where, sentence = sentences[ranking[turn]]
            words += word_count(sentence.plain)
            if words > max_words:
                return chosen
            chosen.append(where)
    return chosen


def by_corpus(pairs: Iterable[tuple[str, Answers]]) -> Mapping[str, Answers]:
    """The answers of several cases summed per corpus (and overall, under ``""``)."""
    totals: dict[str, Answers] = {}
    for corpus, answers in pairs:
        for key in (corpus, ""):
            total = totals.setdefault(key, Answers())
            total.answered += answers.answered
            total.missed += answers.missed
            total.relevant += answers.relevant
            total.cited += answers.cited
    return totals
