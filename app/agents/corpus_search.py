"""Research's searches, through the declared ``search_corpus`` tool.

The agent builds the index once its sources are read, gives the tool that index as its
code for the attempt, and then searches for each question it researches through the
boundary like any caller would: every search is checked, charged and receipted, and a
refused search leaves its question open with the reason in the bundle's errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.agents.ranking import CorpusIndex, Ranked
from contracts import (
    ErrorCode,
    ErrorDetail,
    Question,
    SearchCorpusInput,
    SearchCorpusOutput,
    SearchHit,
)
from graphs.tools import SEARCH_CORPUS, Toolbox, ToolEnv


@dataclass(frozen=True)
class CorpusSearch:
    """The code of ``search_corpus``: the sentences of the index that address a query."""

    index: CorpusIndex

    def __call__(self, args: SearchCorpusInput, env: ToolEnv) -> SearchCorpusOutput:
        """The hits for ``args.query``, best answer first."""
        hits = []
        for at, score in self.index.addressing(args.query, args.limit, together=args.together):
            sentence = self.index.passages[at].sentence
            hits.append(
                SearchHit(
                    source_id=self.index.passages[at].source.id,
                    start=sentence.start,
                    end=sentence.end,
                    score=score,
                    text=sentence.text,
                )
            )
        return SearchCorpusOutput(hits=hits)


ERROR_CODES: dict[str, ErrorCode] = {
    "budget_exhausted": ErrorCode.BUDGET_EXHAUSTED,
    "retryable": ErrorCode.TRANSIENT,
}
"""What a refused search means in the bundle's errors; any other refusal is INTERNAL (the
node declares the tool and the arguments are the task's own questions)."""


def search_questions(
    questions: list[Question],
    objective: Question,
    index: CorpusIndex,
    tools: Toolbox,
    *,
    per_query: int,
) -> tuple[Ranked, list[ErrorDetail]]:
    """Each question's hits as passage indexes, found through the tool; refusals as errors.

    The objective may be answered by sentences of one source together; a sub-question
    only by a sentence that addresses it on its own.
    """
    tools.provide(SEARCH_CORPUS.name, CorpusSearch(index))
    found: dict[str, SearchCorpusOutput] = {}
    errors: list[ErrorDetail] = []
    for question in questions:
        together = question.id == objective.id
        args = SearchCorpusInput(query=question.text, limit=per_query, together=together)
        answer = tools.call(SEARCH_CORPUS.name, args, call_id=f"search-{question.id}")
        if answer.error is None:
            found[question.id] = answer.output
            continue
        errors.append(
            ErrorDetail(
                code=ERROR_CODES.get(answer.error.code, ErrorCode.INTERNAL),
                detail=f"could not search for {question.id}: {answer.error.message}"[:2000],
                field=answer.error.field,
            )
        )
    hit = {item.source_id for output in found.values() for item in output.hits}
    where = {  # only the sources hit: a big corpus's every sentence would cost more
        (passage.source.id, passage.sentence.start): at
        for at, passage in enumerate(index.passages)
        if passage.source.id in hit
    }
    ranked: Ranked = {
        question.id: [
            (where[item.source_id, item.start], item.score)
            for item in (found[question.id].hits if question.id in found else [])
        ]
        for question in questions
    }
    return ranked, errors
