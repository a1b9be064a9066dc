"""Commands around the workflow: serve, a2a, schema, eval and db init."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from app.cli.base import cli, err, out
from app.cli.terminal import visible
from app.errors import QueueUnavailable, UnknownContract
from app.log_lines import print_lines
from app.settings import Settings
from app.storage.postgres import describe_url, is_postgres_url
from graphs.errors import ExitCode


@cli.command()
def serve(
    port: Annotated[
        int | None, typer.Option("--port", help="Port (default 2024, or a free one if taken).")
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    config: Annotated[
        Path | None,
        typer.Option("--config", help="langgraph.json (default: ./langgraph.json, else ours)."),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", help="Runs the server executes at once.")] = 4,
    reload: Annotated[bool, typer.Option("--reload", help="Restart when code changes.")] = False,
) -> None:
    """Start the LangGraph dev server (for Studio and langgraph-sdk), offline."""
    from app.server import dev_server as server

    plan = server.plan_dev_server(config=config, host=host, port=port, jobs=jobs, reload=reload)
    os.chdir(plan.cwd)  # where the server reads .env and resolves relative data paths
    settings = Settings()
    for line in server.banner(plan, settings):
        out.print(line, markup=False)
    for name in server.dotenv_overrides(plan):
        err.print(f"warning: {name} differs in .env and the environment; the server uses .env")
    sys.stdout.flush()
    sys.stderr.flush()
    server.exec_dev_server(plan)


LOOPBACK = ("127.0.0.1", "localhost", "::1")
A2A_PORT = 9999
GRACE_SECONDS = 5
"""Where ``handoff a2a`` listens unless told, or the port is taken."""


@cli.command("a2a")
def a2a_server(
    port: Annotated[
        int | None, typer.Option("--port", help="Port (default 9999, or a free one if taken).")
    ] = None,
    host: Annotated[
        str,
        typer.Option("--host", help="Interface to listen on (see docs/a2a.md before changing)."),
    ] = "127.0.0.1",
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="The URL clients reach it by, for the agent card (default: http://HOST:PORT/).",
        ),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Tasks run at once.")] = 4,
    max_request_bytes: Annotated[
        int, typer.Option("--max-request-bytes", min=1024, help="Largest request body accepted.")
    ] = 1_000_000,
) -> None:
    """Serve the workflow as an A2A agent (needs the a2a extra), on the settings' storage."""
    from app.server.dev_server import ServeError, free_port, port_is_free

    try:
        import uvicorn

        from app.a2a.executor import TASKS
        from app.a2a.service import build_app
    except ImportError as error:
        raise ServeError(
            f"the A2A server needs {error.name}: install the 'a2a' extra, e.g. "
            "pip install -e '.[a2a]'"
        ) from error
    if port is None:
        port = A2A_PORT if port_is_free(host, A2A_PORT) else free_port(host)
    elif not port_is_free(host, port):
        raise ServeError(f"port {port} on {host} is taken; choose another with --port")
    settings = Settings()
    served = url or (f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/")
    if host not in LOOPBACK:
        err.print(
            f"warning: listening on {host} with no authentication: anyone who reaches it can "
            "run and cancel tasks; docs/a2a.md says how to put it behind a proxy that checks",
            markup=False,
        )
    app = build_app(settings, url=served, max_runs=jobs, max_request_bytes=max_request_bytes)
    print_lines(TASKS, "a2a")  # one line per task, as a fleet worker prints per job
    out.print(f"serving the A2A agent at {served}", markup=False)
    out.print(f"  agent card: {served.rstrip('/')}/.well-known/agent-card.json", markup=False)
    out.print(f"  threads:    {describe_url(settings.resolved_database_url())}", markup=False)
    sys.stdout.flush()
    # On Ctrl-C, open requests get GRACE_SECONDS; then the runs stop after their node.
    uvicorn.run(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=GRACE_SECONDS
    )


@cli.command()
def schema(
    name: Annotated[str, typer.Argument(help="Contract name, e.g. TaskSpec.")],
) -> None:
    """Print a contract's JSON Schema."""
    from contracts.registry import by_name, render_schema

    models = by_name()
    if name not in models:
        raise UnknownContract(f"unknown contract {name!r}; expected one of {', '.join(models)}")
    sys.stdout.write(render_schema(models[name]))


@cli.command("eval")
def evaluate(
    cases: Annotated[
        Path | None,
        typer.Option(
            "--cases",
            help="Cases file (default: the project's evals/cases.json); its corpora must be "
            "in the corpus roots (HANDOFF_CORPUS_ROOTS), or in the project's evals/corpora.",
        ),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--case", help="Run only this case (repeatable).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Run the evaluation set on the agents in force; exit 1 on a defect or a missed threshold."""
    from app import evaluation

    chosen = evaluation.load_cases(cases or evaluation.DEFAULT_CASES)
    if only:
        unknown = sorted(set(only) - {case.id for case, _ in chosen})
        if unknown:
            raise evaluation.UnknownCase(
                f"unknown case(s) {', '.join(unknown)}; expected one of "
                + ", ".join(case.id for case, _ in chosen)
            )
        chosen = [(case, corpus) for case, corpus in chosen if case.id in only]
    settings = Settings()

    def progress(result: evaluation.CaseResult) -> None:
        if not as_json:
            err.print(
                f"{result.case.id}: {result.final or result.status}, "
                f"{len(result.defects)} defect(s)",
                markup=False,
            )

    results = evaluation.evaluate(chosen, settings, progress=progress)
    if as_json:
        out.print_json(json.dumps([evaluation.as_json(result) for result in results]))
    else:
        sys.stdout.write(visible(evaluation.table(results)) + "\n")
    if evaluation.failed(results):
        raise typer.Exit(ExitCode.FAILED)


db = typer.Typer(help="Set up the database.", no_args_is_help=True)
cli.add_typer(db, name="db")


@db.command("init")
def db_init() -> None:
    """Create every table the configured database needs; safe to run again."""
    from app.storage.backends import init_database
    from app.storage.postgres import describe_url

    settings = Settings()
    found = init_database(settings)
    if is_postgres_url(settings.resolved_database_url()):
        from app.fleet import Fleet

        try:
            created = Fleet(settings).ensure_schema()
            found.append(f"worker queue: {'created' if created else 'present'} (Procrastinate)")
        except QueueUnavailable:
            found.append("worker queue: not set up (install the queue extra to use workers)")
    out.print(f"database ready: {describe_url(settings.resolved_database_url())}", markup=False)
    for line in found:
        out.print(f"  {line}", markup=False)
