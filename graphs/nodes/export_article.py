"""Export: write the published article to the export folder, once a person confirmed it.

Off by default: a task asks for it with ``policies.export_article`` (the CLI's
``--export``). The write goes through the declared ``export_article`` write tool, so it
pauses for a person first (``graphs.tools.writes``), runs at most once per thread and
article revision, and leaves its receipt in the audit. A rejection leaves the article
published and unexported, with the person's reason in the decision log.
"""

from __future__ import annotations

from typing_extensions import TypedDict

from contracts import (
    DecisionLog,
    ErrorCode,
    ErrorDetail,
    ExportArticleInput,
    RunOutcome,
    TaskSpec,
)
from graphs.declare import node
from graphs.human import thread_token
from graphs.node_runner import NodeCall, NodeResult
from graphs.tools.export import EXPORT_ARTICLE
from graphs.tools.writes import CONFIRM_WRITE, confirmed_write


class ExportInput(TypedDict):
    """The published outcome (its article) and the decisions so far."""

    task: TaskSpec
    outcome: RunOutcome | None
    decisions: DecisionLog | None


class ExportOutput(TypedDict, total=False):
    """The person's decision on the write, recorded; a write that failed, in the outcome."""

    decisions: DecisionLog | None
    outcome: RunOutcome | None


def wants_export(task: TaskSpec, outcome: RunOutcome | None) -> bool:
    """The task asks for an export, and finalize published an article to export."""
    return task.policies.export_article and outcome is not None and outcome.article is not None


@node(
    "export_article",
    reads=ExportInput,
    writes=ExportOutput,
    pauses=CONFIRM_WRITE,
    terminal=True,
    tools=(EXPORT_ARTICLE,),
    done_when=("The published article is in the export folder, or a person said why not.",),
)
def export_article(call: NodeCall) -> NodeResult:
    """Ask to write the article to the export folder; write it once, or record why not."""
    outcome: RunOutcome = call.require("outcome")
    article = outcome.article
    if article is None:
        raise ValueError("export_article runs after finalize published an article; none is")
    name = f"{thread_token(call.step.thread_id)}.md"
    args = ExportArticleInput(article=article, file_name=name)
    call_id = f"export-{article.sha256[:16]}-r{article.revision}"
    done = confirmed_write(
        call, EXPORT_ARTICLE.name, args, call_id=call_id, target=f"the export folder's {name}"
    )
    if done.result is None or done.result.error is None:
        return NodeResult({"decisions": done.decisions})
    failed = ErrorDetail(
        code=ErrorCode.TRANSIENT if done.result.error.retryable else ErrorCode.INTERNAL,
        detail=f"the article was published but not exported: {done.result.error.message}",
    )
    noted = outcome.model_copy(update={"errors": [*outcome.errors, failed]})
    return NodeResult({"decisions": done.decisions, "outcome": noted})
