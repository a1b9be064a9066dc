"""A change of a thread's task: what a person asks to add, drop or tighten, and why.

Applied, it is the task's next version (``task_version`` + 1). What it leaves valid is
decided by each node's input hash, which covers the part of the task its work depends
on: a tighter word limit leaves research alone, a new sub-question adds one branch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from contracts.base import ProseText, VersionedContract, first_problem
from contracts.task import TaskSpec

REVISE_ACTION = "revise"
"""The action a revision is recorded under in the thread's decision log."""
MOVED_QUESTIONS = "question_ids"
"""The recorded revision's ``details`` key: each question id the revision moved, to its
new id ("" when the question was dropped). Answers given earlier follow their question."""


def moved_questions(before: TaskSpec, after: TaskSpec) -> dict[str, str]:
    """The research question ids that change from ``before`` to ``after``, by question.

    Ids are positions (q-1 the objective, then each sub-question), so dropping one moves
    every later one down: an answer a person gave to q-3 belongs to q-2 afterwards.
    """
    new_ids = {text: f"q-{index + 1}" for index, text in enumerate(after.research_questions())}
    moved = {}
    for index, text in enumerate(before.research_questions()):
        old = f"q-{index + 1}"
        if new_ids.get(text, "") != old:
            moved[old] = new_ids.get(text, "")
    return moved


class RevisionRefused(ValueError):
    """A revision that cannot apply to the task it is given; the message names the field."""


class TaskRevision(VersionedContract):
    """The changes a person makes to a thread's task, with who made them and why."""

    kind: Literal["task_revision"] = Field(default="task_revision", description="Discriminator.")
    add_questions: list[ProseText] = Field(
        default_factory=list, max_length=20, description="Sub-questions to research besides."
    )
    drop_questions: list[ProseText] = Field(
        default_factory=list,
        max_length=20,
        description="Sub-questions to drop, as the task words them (never the objective).",
    )
    add_sections: list[str] = Field(
        default_factory=list, max_length=20, description="Section headings to require."
    )
    drop_sections: list[str] = Field(
        default_factory=list, max_length=20, description="Required sections to drop."
    )
    max_words: int | None = Field(
        default=None, ge=10, le=20000, description="The new word limit (tighter or looser)."
    )
    corpus: list[str] | None = Field(
        default=None,
        max_length=100,
        description="The corpus to research instead (folders or files; [] is the default one).",
    )
    reason: ProseText = Field(description="Why the task changes, for the audit and agents.")
    decided_by: str = Field(
        default="human", min_length=1, max_length=100, description="Who changed it."
    )

    EXAMPLES = [
        {
            "add_questions": ["Who found the stone?"],
            "max_words": 300,
            "reason": "The editor wants a shorter piece that says who found it.",
            "decided_by": "editor",
        },
        {"drop_sections": ["Background"], "reason": "Background is covered elsewhere."},
    ]

    @model_validator(mode="after")
    def _changes_something(self) -> TaskRevision:
        if not self.changes_asked():
            raise ValueError(
                "a revision must change something: give add_questions, drop_questions, "
                "add_sections, drop_sections, max_words or corpus"
            )
        return self

    def changes_asked(self) -> list[str]:
        """Each change asked for, as one line (``max_words: 120``)."""
        asked: list[str] = []
        for name in ("add_questions", "drop_questions", "add_sections", "drop_sections"):
            asked += [f"{name.replace('_', ' ')[:-1]}: {item}" for item in getattr(self, name)]
        if self.max_words is not None:
            asked.append(f"max_words: {self.max_words}")
        if self.corpus is not None:
            asked.append(f"corpus: {', '.join(self.corpus) or 'the default corpus'}")
        return asked

    def applied_to(self, task: TaskSpec) -> TaskSpec:
        """The task's next version with these changes; RevisionRefused names what cannot be.

        Every change must take effect (a question to drop is asked, one to add is not yet),
        and the result is validated as a new task is, so a revision no run could serve is
        refused before anything is written.
        """
        questions = list(task.questions)
        sections = list(task.constraints.required_sections)
        for index, text in enumerate(self.drop_questions):
            _must(text in questions, "drop_questions", index, text, "no sub-question", questions)
            questions.remove(text)
        for index, text in enumerate(self.add_questions):
            asked = [task.objective, *questions]
            _must(text not in asked, "add_questions", index, text, "already asked", asked)
            questions.append(text)
        for index, title in enumerate(self.drop_sections):
            _must(title in sections, "drop_sections", index, title, "not required", sections)
            sections.remove(title)
        for index, title in enumerate(self.add_sections):
            title = title.strip()
            _must(title not in sections, "add_sections", index, title, "already required", sections)
            sections.append(title)
        constraints: dict[str, Any] = {
            **task.constraints.model_dump(),
            "required_sections": sections,
        }
        if self.max_words is not None:
            constraints["max_words"] = self.max_words
        data = {
            **task.model_dump(),
            "task_version": task.task_version + 1,
            "questions": questions,
            "constraints": constraints,
        }
        if self.corpus is not None:
            data["corpus"] = self.corpus
        try:
            revised = TaskSpec.model_validate(data)
        except ValidationError as error:
            where, problem = first_problem(error)
            raise RevisionRefused(f"the revised task's {where} is invalid: {problem}") from None
        before = task.model_dump(exclude={"task_version"})
        if revised.model_dump(exclude={"task_version"}) == before:
            raise RevisionRefused(
                f"the revision leaves the task as it is ({'; '.join(self.changes_asked())})"
            )
        return revised


def _must(holds: bool, name: str, index: int, text: str, problem: str, have: list[str]) -> None:
    if not holds:
        listed = "; ".join(repr(item) for item in have) or "none"
        raise RevisionRefused(f"{name}[{index}]: {text!r} is {problem} (the task has: {listed})")


__all__ = [
    "MOVED_QUESTIONS",
    "REVISE_ACTION",
    "RevisionRefused",
    "TaskRevision",
    "moved_questions",
]
