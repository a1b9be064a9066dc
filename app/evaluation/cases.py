"""The evaluation cases: tasks × corpora × what must hold, read from ``evals/cases.json``."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.evaluation.gold import Gold, read_evidence
from app.settings import PROJECT_ROOT
from contracts import ErrorCode
from graphs.errors import ExitCode, HandoffError

DEFAULT_CASES = PROJECT_ROOT / "evals" / "cases.json"
BUNDLED_CORPORA = DEFAULT_CASES.parent / "corpora"
"""The evaluation set's own corpora: a corpus root of ``handoff eval`` only.

They ship with the project, as the bundled corpus does, so the set runs from any folder;
no other run reads them unless ``HANDOFF_CORPUS_ROOTS`` says so.
"""


class _CasesUsage(HandoffError):
    """Cases asked for that the user can correct: a usage error (exit 2)."""

    code = ErrorCode.INVALID_INPUT
    exit_code = ExitCode.USAGE


class UnknownCase(_CasesUsage, LookupError):
    """A case id the cases file does not have."""


class InvalidCases(_CasesUsage, ValueError):
    """A cases file that cannot be read or does not follow the case schema."""


class Case(BaseModel):
    """One evaluation case, as written in the cases file."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
    corpus: str = Field(min_length=1, description="Folder, relative to the cases file.")
    objective: str = Field(min_length=3)
    questions: list[str] = Field(default_factory=list)
    required_sections: list[str] = Field(default_factory=list)
    max_words: int | None = None
    unanswerable: list[str] = Field(default_factory=list)
    uncovered_sections: list[str] = Field(default_factory=list)
    code_answers: list[str] = Field(default_factory=list)
    """Questions (or the objective) whose answer is a code example, shown after its sentence."""
    expect: str = Field(pattern=r"^(completed|open)$")
    notes: str = ""
    gold: Gold = Field(default_factory=dict)
    """Per answerable question (or covered required section), the passages that answer it;
    from ``evidence.json`` beside the cases file when the case gives none."""

    def asked(self) -> list[str]:
        """The questions research is given: the objective first, then the others."""
        return [self.objective, *(text for text in self.questions if text != self.objective)]

    def answerable(self) -> list[str]:
        """The questions the corpus answers, which the article should."""
        return [text for text in self.asked() if text not in self.unanswerable]


def load_cases(path: Path = DEFAULT_CASES) -> list[tuple[Case, Path]]:
    """The cases of a file, each with its corpus resolved; bad input names the field."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InvalidCases(f"cannot read evaluation cases {path}: {error}") from error
    except RecursionError:  # json's decoder counts each nesting level against the limit
        raise InvalidCases(
            f"cannot read evaluation cases {path}: its JSON is nested too deeply to parse "
            "(expected a list of case objects)"
        ) from None
    if not isinstance(raw, list):
        raise InvalidCases(f"{path}: expected a JSON list of cases, got {type(raw).__name__}")
    try:
        evidence = read_evidence(path)
    except ValueError as error:
        raise InvalidCases(str(error)) from None
    cases: list[tuple[Case, Path]] = []
    for index, item in enumerate(raw):
        try:
            case = Case.model_validate(item)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InvalidCases(f"{path}: case [{index}] field {where}: {first['msg']}") from None
        unasked = [q for q in case.code_answers if q not in (case.objective, *case.questions)]
        if unasked:
            raise InvalidCases(
                f"{path}: case [{index}] field code_answers: {unasked[0]!r} is neither the "
                "objective nor one of the questions"
            )
        corpus = (path.parent / case.corpus).resolve()
        if not corpus.is_dir():
            raise InvalidCases(f"{path}: case {case.id!r} corpus {case.corpus!r} is not a folder")
        if not case.gold and case.id in evidence:
            case = case.model_copy(update={"gold": evidence[case.id]})
        asked = {*case.asked(), *case.required_sections}
        stray = [key for key in case.gold if key not in asked]
        if stray:
            raise InvalidCases(
                f"{path}: case {case.id!r} gold answer for {stray[0]!r}, which is neither the "
                "objective, one of its questions nor a required section"
            )
        cases.append((case, corpus))
    ids = [case.id for case, _ in cases]
    if len(ids) != len(set(ids)):
        raise InvalidCases(f"{path}: case ids must be unique")
    return cases
