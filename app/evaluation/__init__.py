"""The evaluation harness: whether a finished run keeps its task.

A fixed set of cases (``evals/cases.json``: tasks × corpora × what must hold) is run on
the agents in force (offline by default; ``HANDOFF_MODEL`` for a model), each in its own
thread on a scratch SQLite file. A run that pauses for a person on open questions is
recorded as paused and then approved, so the article it would publish is checked too.

What is measured, per case, from the stored contracts and artifacts alone (never from
the Reviewer's verdict, which is what this harness keeps honest):

- **structure**: the outcome, bundle and draft validate; the article has its title, its
  required sections, and a Sources list when it cites anything;
- **verbatim**: every cited claim's quote is its source snapshot's text at its span, the
  snapshot has the sha256 research recorded, and the span lies in prose;
- **code examples**: a cited fact's code example is the source's code at its span and is
  shown right after the sentence citing it, as the only code an article may hold; each
  question a case says is answered by code (``code_answers``) gets such an example;
- **coverage**: cited sentences ÷ sentences of the article's text;
- **sections**: required sections present, not empty, and on topic (a corpus with nothing
  on a section's topic must leave it empty, never fill it with something else);
- **limits**: the word count (``graphs.markdown.word_count``) within ``max_words``;
- **answerability**: every unanswerable question open, every answerable one answered;
  a case with anything unanswerable ends paused or ``partial``, never ``completed``; one
  with nothing unanswerable ends ``completed``.

- **answers against gold** (``app/evaluation/gold.py``): answer recall and precision on
  the gold sentence of each answerable question, beside the top BM25 sentences under the
  same word limit, per case and per corpus.

Any miss is a defect; ``handoff eval`` exits non-zero when there is one, or when a corpus
(or the whole set) misses an answer threshold: recall below 0.8 or below the baseline's,
precision not above the baseline's. The per-corpus verdicts are printed under the table.
"""

from __future__ import annotations

from app.evaluation.cases import DEFAULT_CASES, Case, InvalidCases, UnknownCase, load_cases
from app.evaluation.harness import evaluate
from app.evaluation.measures import CaseResult
from app.evaluation.report import COLUMNS, as_json, failed, table

__all__ = [
    "COLUMNS",
    "DEFAULT_CASES",
    "Case",
    "CaseResult",
    "InvalidCases",
    "UnknownCase",
    "as_json",
    "evaluate",
    "failed",
    "load_cases",
    "table",
]
