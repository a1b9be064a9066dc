"""The command's frame: its consoles, its Typer app, and how errors become exit codes."""

from __future__ import annotations

import sys
import traceback
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from app.cli.terminal import TerminalConsole, visible
from app.error_lines import error_line, redacted
from app.exit_codes import EXPECTED_ERRORS, for_error
from app.opening import open_workflow as open_workflow  # the commands' way to their threads
from app.storage.postgres import is_postgres_url
from app.version import package_version
from app.workflow import Workflow

if TYPE_CHECKING:
    from app.fleet.queue import Queue

out = TerminalConsole(highlight=False, soft_wrap=True)
wide = TerminalConsole(highlight=False, width=None if out.is_terminal else 200)
err = TerminalConsole(stderr=True, highlight=False, soft_wrap=True)


class _MappedErrors(TyperGroup):
    """Every command's errors end here: one line on stderr and the error's exit code.

    The line (and the ``--debug`` traceback) has the database passwords masked, since a
    driver's error may quote the URL, and its control characters made visible.

    ``--debug`` adds the traceback but keeps the exit code, so a script that retries on a
    code behaves the same while someone investigates. Errors that are not expected (see
    ``EXPECTED_ERRORS``) are bugs and propagate with their traceback.
    """

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]  # typer passes its own
        """Run the command, turning an expected error into its exit code."""
        try:
            return super().invoke(ctx)
        except EXPECTED_ERRORS as error:
            if ctx.params.get("debug"):
                _write_traceback(error)
            line = visible(redacted(error_line(error)), lines=False)
            err.print(f"error: {line}", markup=False)
            raise typer.Exit(int(for_error(error))) from None


def _write_traceback(error: BaseException) -> None:
    sys.stderr.write(visible(redacted("".join(traceback.format_exception(error)))))


cli = typer.Typer(
    cls=_MappedErrors,
    help="Run and inspect handoff workflows (Research → Writer → Reviewer).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(asked: bool) -> None:
    """``--version``: the installed distribution's version, read from its metadata."""
    if asked:
        typer.echo(f"handoff {package_version()}")
        raise typer.Exit()


@cli.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks on errors (the exit code stays).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """Read by the error handler of ``_MappedErrors`` from the context's params."""


def open_queue(workflow: Workflow) -> Queue | None:
    """The worker fleet's queue over ``workflow``, or None where none can exist (SQLite)."""
    if not is_postgres_url(workflow.settings.resolved_database_url()):
        return None
    from app.fleet.queue import Queue

    return Queue(workflow)
