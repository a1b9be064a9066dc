"""``handoff revise``: change a thread's task; only the work the change invalidates is redone."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from app.cli import base
from app.cli.base import cli
from app.cli.options import JsonOpt, ThreadArg
from app.cli.output import print_outcome, progress
from app.exit_codes import for_outcome


@cli.command()
def revise(
    thread_id: ThreadArg,
    reason: Annotated[str, typer.Option("--reason", help="Why the task changes (required).")],
    question: Annotated[
        list[str] | None, typer.Option("--question", help="A sub-question to add (repeat).")
    ] = None,
    drop_question: Annotated[
        list[str] | None,
        typer.Option("--drop-question", help="A sub-question to drop, as worded (repeat)."),
    ] = None,
    section: Annotated[
        list[str] | None, typer.Option("--section", help="A section to require (repeat).")
    ] = None,
    drop_section: Annotated[
        list[str] | None,
        typer.Option("--drop-section", help="A required section to drop (repeat)."),
    ] = None,
    max_words: Annotated[
        int | None, typer.Option("--max-words", help="The new word limit.")
    ] = None,
    corpus: Annotated[
        list[str] | None,
        typer.Option("--corpus", help="Research this corpus instead (repeat for several)."),
    ] = None,
    by: Annotated[str, typer.Option("--by", help="Who changes it.")] = "human",
    as_json: JsonOpt = False,
) -> None:
    """Revise a thread's task (a new task version) and run it again, reusing what still holds.

    Works on a waiting, partial, failed or completed thread; a published article keeps its
    revision and the run publishes a new one. `handoff history` says per node whether it
    was reused or re-run, and why.
    """
    revision: dict[str, Any] = {
        "add_questions": question or [],
        "drop_questions": drop_question or [],
        "add_sections": section or [],
        "drop_sections": drop_section or [],
        "max_words": max_words,
        "corpus": corpus,
        "reason": reason,
        "decided_by": by,
    }
    with base.open_workflow(thread=thread_id) as workflow:
        outcome = workflow.revise(thread_id, revision, on_progress=None if as_json else progress)
        print_outcome(outcome, workflow.settings, as_json)
    raise typer.Exit(int(for_outcome(outcome)))
