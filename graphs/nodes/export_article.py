"""Export: write the published article to the export folder, once a person confirmed it.

Off by default: a task asks for it with ``policies.export_article`` (the CLI's
``--export``). Two nodes make the step (``graphs.tools.writes``): ``confirm_export``
pauses for a person and records the decision; after an approval, ``export_article`` runs
the declared ``export_article`` write tool, at most once per thread and article revision,
and leaves its receipt in the audit. The approval is saved before the write starts, so a
process killed around the write resumes into the write, never into the question.

A rejection leaves the article published and unexported, with the person's reason in the
decision log. A write that failed for a reason that may pass (the file's path blocked, a
full disk) is in the outcome as ``TRANSIENT`` and asked again: approving runs it again,
rejecting ends the thread published and unexported. Any other failure ends it so at once.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from contracts import (
    DecisionLog,
    ErrorCode,
    ErrorDetail,
    ExportArticleInput,
    RunOutcome,
    TaskSpec,
)
from graphs.boundary import read
from graphs.declare import node
from graphs.human import thread_token
from graphs.node_runner import NodeCall, NodeResult
from graphs.routing import STOP
from graphs.tools.export import EXPORT_ARTICLE
from graphs.tools.writes import CONFIRM_WRITE, WriteCall, approved, approved_write, confirm_write

EXPORT_FIELD = "policies.export_article"
"""The field an export's error names: the policy that asked for the export."""
NOT_EXPORTED = "the article was published but not exported"


class ExportInput(TypedDict):
    """The published outcome (its article) and the decisions so far."""

    task: TaskSpec
    outcome: RunOutcome | None
    decisions: DecisionLog | None


class ConfirmOutput(TypedDict, total=False):
    """The person's decision on the write, recorded; a declined retry, in the outcome."""

    decisions: DecisionLog | None
    outcome: RunOutcome | None


class ExportOutput(TypedDict, total=False):
    """The outcome: published and exported, or why the write failed."""

    outcome: RunOutcome | None


def wants_export(task: TaskSpec, outcome: RunOutcome | None) -> bool:
    """The task asks for an export, and finalize published an article to export."""
    return task.policies.export_article and outcome is not None and outcome.article is not None


def export_failure(outcome: RunOutcome | None) -> ErrorDetail | None:
    """The error of the export's last run, if it failed."""
    errors = outcome.errors if outcome is not None else []
    return next((error for error in errors if error.field == EXPORT_FIELD), None)


def retry_wanted(outcome: RunOutcome | None) -> bool:
    """The export failed for a reason that may pass: a person is asked to run it again."""
    failure = export_failure(outcome)
    return failure is not None and failure.code == ErrorCode.TRANSIENT


def published(outcome: RunOutcome, *errors: ErrorDetail) -> RunOutcome:
    """The published outcome with ``errors`` as its export's (none: exported)."""
    kept = [error for error in outcome.errors if error.field != EXPORT_FIELD]
    retryable = any(error.code == ErrorCode.TRANSIENT for error in errors)
    return outcome.model_copy(update={"errors": [*kept, *errors], "retryable": retryable})


def export_call(call: NodeCall, outcome: RunOutcome) -> WriteCall:
    """The one write call of this article revision, the same in both nodes."""
    article = outcome.article
    if article is None:
        raise ValueError(f"{call.spec.name} runs after finalize published an article; none is")
    name = f"{thread_token(call.step.thread_id)}.md"
    return WriteCall(
        EXPORT_ARTICLE,
        ExportArticleInput(article=article, file_name=name),
        call_id=f"export-{article.sha256[:16]}-r{article.revision}",
        target=f"the export folder's {name}",
    )


@node(
    "confirm_export",
    reads=ExportInput,
    writes=ConfirmOutput,
    pauses=CONFIRM_WRITE,
    terminal=True,
)
def confirm_export(call: NodeCall) -> NodeResult:
    """Ask to write the article to the export folder (again, if its last run failed)."""
    outcome: RunOutcome = call.require("outcome")
    failure = export_failure(outcome) if retry_wanted(outcome) else None
    why = failure.detail.removeprefix(f"{NOT_EXPORTED}: ") if failure is not None else None
    answer = confirm_write(call, export_call(call, outcome), failed=why)
    if answer.approved or failure is None:
        return NodeResult({"decisions": answer.decisions})
    decided = answer.decision
    declined = ErrorDetail(
        code=ErrorCode.HUMAN_REJECTED,
        detail=f"{NOT_EXPORTED}: {why}; {decided.decided_by} declined to run it again: "
        f"{decided.reason}"[:2000],
        field=EXPORT_FIELD,
    )
    return NodeResult({"decisions": answer.decisions, "outcome": published(outcome, declined)})


@node(
    "export_article",
    reads=ExportInput,
    writes=ExportOutput,
    terminal=True,
    tools=(EXPORT_ARTICLE,),
    done_when=("The published article is in the export folder, or a person said why not.",),
)
def export_article(call: NodeCall) -> NodeResult:
    """Write the approved article to the export folder once, or record why it failed."""
    outcome: RunOutcome = call.require("outcome")
    done = approved_write(call, export_call(call, outcome))
    if done.error is None:
        written = getattr(done.output, "path", None)
        where = {"reason": f"exported to {written}"} if written else {}
        return NodeResult({"outcome": published(outcome).model_copy(update=where)})
    failed = ErrorDetail(
        code=ErrorCode.TRANSIENT if done.error.retryable else ErrorCode.INTERNAL,
        detail=f"{NOT_EXPORTED}: {done.error.message}"[:2000],
        field=EXPORT_FIELD,
    )
    return NodeResult({"outcome": published(outcome, failed)})


def route_after_confirm_export(state: ExportInput) -> Literal["export_article", "__end__"]:
    """An approved export is written next; a rejected one ends the run unexported."""
    log = read(state, "decisions", DecisionLog, node="route_after_confirm_export")
    return "export_article" if approved(log) else STOP


def route_after_export(state: ExportInput) -> Literal["confirm_export", "__end__"]:
    """The export written, or failed for good, is the last step; a retryable failure is not.

    The person is asked again whether to run it once more: the thread waits on the export
    instead of ending with a failure nothing could retry.
    """
    outcome = read(state, "outcome", RunOutcome, node="route_after_export")
    return "confirm_export" if retry_wanted(outcome) else STOP
