"""The graph's input: what to do, within which limits, under which policies."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo

from contracts.base import (
    Contract,
    Duration,
    Identifier,
    ProseText,
    UtcDatetime,
    VersionedContract,
    first_problem,
)

StalePolicy = Literal["reevaluate", "fail", "ask"]

WORD_LIMIT_PHRASE = re.compile(
    r"\b(?:at most|no more than|max(?:imum)?|under|≤)\s*(\d{2,5})\s+words\b", re.I
)
"""A prose constraint that sets a word limit, e.g. "at most 120 words"."""
SECTION_PHRASE = re.compile(r"^\s*(?:include a |add a )?section\s*[:\-]\s*(.+?)\s*$", re.I)
"""A prose constraint that requires a section, e.g. "section: Sources"."""


class Constraints(Contract):
    """Checkable constraints on the article; the Reviewer verifies each."""

    max_words: int | None = Field(
        default=None, ge=10, le=20000, description="Most words the article body may have."
    )
    required_sections: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Section headings (## level) the article must contain.",
    )
    notes: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="Further constraints in prose, passed to agents verbatim.",
    )

    @field_validator("required_sections")
    @classmethod
    def _sections_are_titles(cls, value: list[str]) -> list[str]:
        for index, title in enumerate(value):
            if not title.strip() or len(title) > 120 or "\n" in title:
                raise ValueError(
                    f"required_sections[{index}] must be a one-line title of 1-120 characters"
                )
        return [title.strip() for title in value]

    def tightened(self, text: str) -> Constraints:
        """These constraints with one prose constraint applied.

        "at most 120 words" lowers the word limit, "section: Sources" adds a required
        section, anything else becomes a note. The result is validated here, so a phrase
        no article could satisfy (a limit out of range, a title that is not one) is refused
        when a person gives it, instead of failing every later step of the thread.
        """
        words = WORD_LIMIT_PHRASE.search(text)
        section = SECTION_PHRASE.match(text)
        update: dict[str, Any]
        if words:
            limit = int(words.group(1))
            update = {"max_words": limit if self.max_words is None else min(self.max_words, limit)}
            _check(text, {"max_words": limit})
        elif section:
            titles = self.required_sections
            update = {"required_sections": titles + [section.group(1)]}
            if section.group(1) in titles:
                update = {}
        else:
            update = {"notes": self.notes + [text]} if text not in self.notes else {}
        return _check(text, {**self.model_dump(), **update})


def _check(text: str, data: dict[str, Any]) -> Constraints:
    try:
        return Constraints.model_validate(data)
    except ValidationError as error:
        where, problem = first_problem(error)
        raise ValueError(
            f"constraint {text[:80]!r} would make {where} invalid: {problem}"
        ) from None


class Budget(Contract):
    """Hard limits; when one is spent the run ends partial or failed, never loops."""

    max_tool_calls: int | None = Field(
        default=None, ge=1, description="Most tool calls (source reads, searches) per thread."
    )
    max_tokens: int | None = Field(default=None, ge=1, description="Most model tokens per thread.")
    deadline: UtcDatetime | None = Field(
        default=None, description="Time after which no further step starts (timezone-aware)."
    )
    max_review_rounds: int = Field(
        default=3, ge=1, le=50, description="Most Writer→Reviewer rounds."
    )
    max_attempts: int = Field(default=3, ge=1, le=10, description="Most attempts per node step.")


class Policies(Contract):
    """How the workflow decides at its decision points."""

    require_approval: bool = Field(
        default=False, description="Ask a human to approve research before writing."
    )
    on_stale: StalePolicy = Field(
        default="reevaluate",
        description="What to do when a handed-off input changed: reevaluate, fail or ask.",
    )
    on_review_exhausted: Literal["end", "ask"] = Field(
        default="end",
        description="When the reviewer rejects or review rounds run out: end the run "
        "(partial or failed), or ask a human (accept as partial, grant a round, abort).",
    )
    export_article: bool = Field(
        default=False,
        description="After publishing, write the article to the export folder, once a "
        "person confirmed the write.",
    )
    decision_timeout: Duration | None = Field(
        default=None,
        description='How long a request for a person\'s decision waits, e.g. "24h", "90m", '
        '"2d" or "PT24H". Past it the request is answered by its pause\'s safe default '
        '(a deny), recorded once by "policy: expired". None: a request waits until answered.',
    )


class TaskSpec(VersionedContract):
    """The workflow's input. Everything else in the run is derived from it."""

    kind: Literal["task_spec"] = Field(default="task_spec", description="Discriminator.")
    task_id: Identifier = Field(
        default="",
        description="Stable id of the task. When none is given (a Studio or SDK client "
        "sending only an objective) it is derived from the task's content: task-<12 hex>.",
    )
    task_version: int = Field(
        default=1, ge=1, description="Bumped when the task changes; invalidates derived work."
    )
    objective: str = Field(
        min_length=3, max_length=2000, description="What the article must explain."
    )
    questions: list[ProseText] = Field(
        default_factory=list,
        max_length=20,
        description="Sub-questions research must answer besides the objective itself.",
    )
    constraints: Constraints = Field(
        default_factory=Constraints, description="Checkable constraints on the article."
    )
    corpus: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="Folders or documents to research; empty means the default corpus.",
    )
    budget: Budget = Field(default_factory=Budget, description="Limits for the run.")
    policies: Policies = Field(default_factory=Policies, description="Decision policies.")

    EXAMPLES = [
        {
            "task_id": "rosetta",
            "task_version": 2,
            "objective": (
                "Explain how the Rosetta Stone led to the decipherment of Egyptian hieroglyphs"
            ),
            "questions": [
                "What does the stone contain?",
                "Who deciphered the hieroglyphs, and how?",
            ],
            "constraints": {
                "max_words": 800,
                "required_sections": ["Background", "Decipherment"],
                "notes": ["No jargon."],
            },
            "corpus": ["examples/corpus"],
            "budget": {
                "max_tool_calls": 40,
                "max_tokens": 50000,
                "deadline": "2030-01-01T12:00:00Z",
                "max_attempts": 2,
            },
            "policies": {"require_approval": True, "on_stale": "ask"},
        },
        {"objective": "Explain how the Rosetta Stone was deciphered"},
    ]

    @field_validator("objective", mode="before")
    @classmethod
    def _strip_objective(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _derive_task_id(cls, data: Any) -> Any:
        """Give a task without an id the same id every time it is read.

        A served thread keeps its input as sent, and every node reads it again; an id drawn
        at random would differ on each read. One derived from the content does not.
        """
        if not isinstance(data, dict) or data.get("task_id") not in (None, ""):
            return data
        content = {key: value for key, value in data.items() if key != "task_id"}
        canonical = json.dumps(content, sort_keys=True, default=str, ensure_ascii=False)
        digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
        return {**data, "task_id": f"task-{digest[:12]}"}

    def research_questions(self) -> list[str]:
        """The questions research must answer: the objective first, then each sub-question.

        A sub-question adds to the objective and never replaces it: an article answering
        only the sub-questions would have lost the task.
        """
        return [self.objective] + [text for text in self.questions if text != self.objective]


def choice_of(owner: type[BaseModel], name: str) -> Any:
    """A run choice of ``owner``'s field ``name``, unset by default.

    It keeps the field's own description and bounds, written once, on the owner.
    """
    return FieldInfo.merge_field_infos(owner.model_fields[name], default=None)


class RunChoices(Contract):
    """What an assistant (a run's context) may choose for the tasks it runs.

    Each field left empty keeps the task's own value. Chosen values replace the task's
    when a node of the run reads it, and the task with them is written back to the thread,
    so routing, the audit and later resumes all see the same choice. Each choice is a
    field of the task's ``Policies`` or ``Budget``, of the same name and bounds.
    """

    require_approval: bool | None = choice_of(Policies, "require_approval")
    on_stale: StalePolicy | None = choice_of(Policies, "on_stale")
    max_review_rounds: int | None = choice_of(Budget, "max_review_rounds")

    def applied(self, task: TaskSpec) -> TaskSpec:
        """The task with these choices in force (the same object when nothing changes)."""
        chosen = self.model_dump(exclude_none=True)
        policies = {k: v for k, v in chosen.items() if k in Policies.model_fields}
        budget = {k: v for k, v in chosen.items() if k in Budget.model_fields}
        changed = task.model_copy(
            update={
                "policies": task.policies.model_copy(update=policies),
                "budget": task.budget.model_copy(update=budget),
            }
        )
        return task if changed == task else changed

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _check_choices(cls)

    @classmethod
    def _not_choices(cls) -> tuple[str, ...]:
        """Fields a subclass adds that are not task choices (e.g. the server's models)."""
        return ()

    def describe(self) -> str:
        """The choices made, for the audit (e.g. ``max_review_rounds=1, require_approval=True``)."""
        chosen = self.model_dump(exclude_none=True)
        return ", ".join(f"{name}={value}" for name, value in chosen.items())


def _check_choices(choices: type[RunChoices]) -> None:
    """Fail at import when a run choice is no field of the task's policies or budget."""
    owned = set(Policies.model_fields) | set(Budget.model_fields)
    stray = sorted(set(choices.model_fields) - owned - set(choices._not_choices()))
    if stray:
        raise TypeError(
            f"{choices.__name__}: run choices {stray} are no field of the task's policies or "
            "budget; a choice replaces a task field of the same name"
        )


_check_choices(RunChoices)


__all__ = [
    "Budget",
    "Constraints",
    "Identifier",
    "Policies",
    "RunChoices",
    "StalePolicy",
    "TaskSpec",
]
