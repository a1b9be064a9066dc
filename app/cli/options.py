"""Options several commands take, each declared once, and what they make.

``run`` and ``submit`` take a task's options, ``resume`` and ``submit --resume`` a
decision's. A group is declared here once; ``taking(GROUP)`` adds its options to a
command's signature (Typer reads the signature), and the command's body gets them as
keyword arguments.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_args, get_type_hints

import typer

from app.cli.decisions import DecisionFlags, name_value
from app.workflow import Workflow
from contracts import Constraints, TaskSpec
from graphs.errors import UsageError

Command = TypeVar("Command", bound=Callable[..., None])
KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY

Objective = Annotated[str, typer.Argument(help="What the article must explain.")]
CorpusOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--corpus",
        help="Folder or file to research (repeatable); inside the working folder or the "
        "corpus roots (HANDOFF_CORPUS_ROOTS).",
    ),
]
ThreadOpt = Annotated[str | None, typer.Option("--thread", help="Thread id to use.")]
MaxWordsOpt = Annotated[int | None, typer.Option("--max-words", help="Word limit.")]
SectionOpt = Annotated[
    list[str] | None, typer.Option("--section", help="Required section (repeatable).")
]
MaxRoundsOpt = Annotated[int | None, typer.Option("--max-rounds", help="Review rounds.")]
QuestionOpt = Annotated[
    list[str] | None,
    typer.Option("--question", help="Sub-question to research besides the objective (repeatable)."),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="A task field by its dotted path, KEY=VALUE (repeatable; the value read as JSON "
        "when it is JSON, else as text): any field a project adds to TaskSpec, e.g. "
        "--set policies.editorial_gate=true.",
    ),
]
ApprovalOpt = Annotated[
    bool, typer.Option("--require-approval", help="Pause for approval after research.")
]
ExportOpt = Annotated[
    bool,
    typer.Option(
        "--export", help="Write the article to the export folder once a person confirms it."
    ),
]
DecisionTimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--decision-timeout",
        help="How long a request for a decision waits (24h, 90m, 2d); past it, the default "
        "(deny) is recorded.",
    ),
]
AskOnReviewOpt = Annotated[
    bool, typer.Option("--ask-on-review", help="Ask a human when review cannot approve in budget.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")]
ThreadArg = Annotated[str, typer.Argument(help="Thread id.")]
InterruptBeforeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--interrupt-before",
        help="Stop before this node (repeatable); `handoff resume ID` goes on.",
    ),
]
InterruptAfterOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--interrupt-after",
        help="Stop after this node (repeatable); `handoff resume ID` goes on.",
    ),
]
GraphOpt = Annotated[
    str | None,
    typer.Option(
        "--graph",
        help="The graph to run, one of langgraph.json's (default: handoff; for a thread, the "
        "graph that made it).",
    ),
]
ListJsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
ApproveOpt = Annotated[bool, typer.Option("--approve", help="Approve the request.")]
RejectOpt = Annotated[bool, typer.Option("--reject", help="Reject (needs --reason).")]
AcceptPartialOpt = Annotated[
    bool, typer.Option("--accept-partial", help="Accept the draft as partial.")
]
GrantRoundOpt = Annotated[bool, typer.Option("--grant-round", help="Grant another review round.")]
AbortOpt = Annotated[bool, typer.Option("--abort", help="Abort (needs --reason).")]
ActionOpt = Annotated[
    str | None,
    typer.Option(
        "--action", help="Any action the request allows, by name (e.g. accept_new_revision)."
    ),
]
ReasonOpt = Annotated[str | None, typer.Option("--reason", help="Why.")]
AnswerOpt = Annotated[
    list[str] | None, typer.Option("--answer", help="QID=TEXT answer (repeatable).")
]
ConstraintOpt = Annotated[
    list[str] | None, typer.Option("--constraint", help="Constraint to add (repeatable).")
]
DetailOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--detail",
        help="NAME=VALUE: a field of the pause's own decision (VALUE as JSON, or text; "
        "repeatable).",
    ),
]
DecisionFileOpt = Annotated[
    Path | None, typer.Option("--decision-file", help="HumanDecision as JSON.")
]


TASK_OPTIONS: dict[str, Any] = {
    "corpus": CorpusOpt,
    "thread": ThreadOpt,
    "max_words": MaxWordsOpt,
    "section": SectionOpt,
    "max_rounds": MaxRoundsOpt,
    "question": QuestionOpt,
    "require_approval": ApprovalOpt,
    "ask_on_review": AskOnReviewOpt,
    "export": ExportOpt,
    "decision_timeout": DecisionTimeoutOpt,
    "set": SetOpt,
}
"""A task's options (``run``, ``submit``), by the keyword the command's body gets each as
(Typer's idiom: the keyword is the parameter's name, the flag is declared in its option)."""

DECISION_OPTIONS: dict[str, Any] = {
    "approve": ApproveOpt,
    "reject": RejectOpt,
    "accept_partial": AcceptPartialOpt,
    "grant_round": GrantRoundOpt,
    "abort": AbortOpt,
    "action": ActionOpt,
    "reason": ReasonOpt,
    "answer": AnswerOpt,
    "constraint": ConstraintOpt,
    "detail": DetailOpt,
    "decision_file": DecisionFileOpt,
}
"""A decision's options (``resume``, ``submit --resume``)."""


def parameter(name: str, option: Any) -> inspect.Parameter:
    """The keyword parameter ``name`` of an option, read by Typer from the signature.

    A flag (``bool``) defaults to False, any other option to None (not given).
    """
    default = False if get_args(option)[0] is bool else None
    return inspect.Parameter(name, KEYWORD_ONLY, default=default, annotation=option)


def taking(*groups: Mapping[str, Any]) -> Callable[[Command], Command]:
    """Give a command the options of ``groups`` after its own; its ``**options`` gets them."""

    def decorate(function: Command) -> Command:
        hints = get_type_hints(function, include_extras=True)
        own = [
            parameter.replace(annotation=hints[parameter.name])
            for parameter in inspect.signature(function).parameters.values()
            if parameter.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        added = [parameter(name, option) for group in groups for name, option in group.items()]

        @functools.wraps(function)
        def command(**given: Any) -> None:
            function(**given)

        parameters = [*own, *added]
        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        command.__annotations__ = {item.name: item.annotation for item in parameters}
        return command  # type: ignore[return-value]

    return decorate


def decision_flags(params: dict[str, Any]) -> DecisionFlags:
    """The decision options of a command (``resume``, ``submit``), from its parameters."""
    return DecisionFlags(
        approve=params["approve"],
        reject=params["reject"],
        accept_partial=params["accept_partial"],
        grant_round=params["grant_round"],
        abort=params["abort"],
        action=params["action"],
        reason=params["reason"],
        answers=tuple(params["answer"] or ()),
        constraints=tuple(params["constraint"] or ()),
        details=tuple(params["detail"] or ()),
        decision_file=params["decision_file"],
    )


def task_of(workflow: Workflow, objective: str, params: dict[str, Any]) -> TaskSpec:
    """The TaskSpec a command's task options (``run``, ``submit``) describe."""
    budget: dict[str, Any] = {}
    if params["max_rounds"] is not None:
        budget["max_review_rounds"] = params["max_rounds"]
    task = workflow.task(
        objective,
        corpus=[str(path) for path in params["corpus"] or []],
        constraints=Constraints(
            max_words=params["max_words"], required_sections=params["section"] or []
        ),
        budget=budget,
        questions=params["question"] or [],
        policies={
            "require_approval": params["require_approval"],
            "on_review_exhausted": "ask" if params["ask_on_review"] else "end",
            "export_article": params["export"],
            "decision_timeout": params["decision_timeout"],
        },
    )
    return with_fields(task, params.get("set") or [])


class TaskFieldUsage(UsageError):
    """A ``--set`` that names no task field the way ``KEY=VALUE`` does."""


def with_fields(task: TaskSpec, assignments: list[str]) -> TaskSpec:
    """``task`` with each ``--set KEY=VALUE`` applied, validated as a TaskSpec again.

    A field a project adds to the task (a policy, a tone) is set from the CLI with no option
    of its own; a wrong path or value is refused naming the field, as any task is.
    """
    if not assignments:
        return task
    data = task.model_dump(mode="json")
    for assignment in assignments:
        found = name_value(assignment)
        if found is None:
            raise TaskFieldUsage(
                f"--set {assignment!r}: expected KEY=VALUE, e.g. --set policies.editorial_gate=true"
            )
        key, value = found
        *path, last = key.split(".")
        target = data
        for part in path:
            inner = target.setdefault(part, {})
            if not isinstance(inner, dict):
                raise TaskFieldUsage(f"--set {key}: {part!r} is not a group of task fields")
            target = inner
        target[last] = value
    return TaskSpec.model_validate(data)
