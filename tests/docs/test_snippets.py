"""Every block of the README and docs/ does what the page says: each is run as a reader
would run it (in a scratch folder, with the project's virtual environment on PATH), or, for
blocks that are not code, checked against what they describe."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import typer.main

from app.agents.selection import agent_nodes
from app.cli import cli
from app.exit_codes import ExitCode
from app.server.dev_server import OFFLINE_DEFAULTS, OFFLINE_ENV, free_port
from app.settings import Settings
from graphs import WIRING
from tests.backends import postgres_schema
from tests.docs.snippets import (
    ROOT,
    Snippet,
    SnippetError,
    all_snippets,
    parse_info,
    section_prose,
    touched,
)
from tests.server.conftest import server_folder

SNIPPETS = all_snippets()
VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
SECONDS = 300
SERVER_READY_SECONDS = 90.0
PROJECT = ("app", "graphs", "contracts", "docs", "examples", "pyproject.toml", "langgraph.json")
"""What a copy of the project needs for the adaptation walk-through to run in it."""


def chosen(language: str, *, having: str | None = None, marks: tuple[str, ...] = ()) -> list[Any]:
    """Parameters: the blocks of a language with (or, for None, without) an attribute."""
    found = []
    for snippet in SNIPPETS:
        if snippet.language != language:
            continue
        attributes = snippet.words | set(snippet.options)
        if (having is None and attributes) or (having is not None and having not in attributes):
            continue
        found.append(
            pytest.param(snippet, id=snippet.id, marks=[getattr(pytest.mark, m) for m in marks])
        )
    return found


def reader_env(**extra: str) -> dict[str, str]:
    """A reader's shell after ``source .venv/bin/activate``: no HANDOFF_* set, offline."""
    outer = ("HANDOFF_", "MAKE", "MFLAGS", "PYTHONPATH")  # `make test` runs these tests
    env = {k: v for k, v in os.environ.items() if not k.startswith(outer)}
    env["PATH"] = f"{VENV_BIN}:{SYSTEM_PATH}"
    env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    return {**OFFLINE_DEFAULTS, **env, **OFFLINE_ENV, **extra}


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )


def succeeded(result: subprocess.CompletedProcess[str], snippet: Snippet) -> None:
    assert result.returncode == 0, (
        f"{snippet.id} exited {result.returncode}\n--- block\n{snippet.text}"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    )


# -- the pages themselves ----------------------------------------------------------------


def test_the_readme_quick_start_fits_on_one_screen_and_links_every_doc() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("\n## Layout\n", 1)[0]  # the map of the tree follows it
    assert len(quick_start.splitlines()) <= 50, "a screen is 50 lines; move detail to docs/"
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, f"README does not link {page.name}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
    return {_anchor(heading) for heading in headings}


def test_every_relative_link_leads_to_a_page_and_heading_that_exist() -> None:
    for page in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), f"{page.name} links {target}: no such file"
            if anchor:
                assert anchor in _anchors(linked), f"{page.name} links {target}: no such heading"


def test_a_block_without_a_known_language_or_attribute_is_refused() -> None:
    with pytest.raises(SnippetError, match="needs a language"):
        parse_info("", "page.md:1")
    with pytest.raises(SnippetError, match="unknown language 'sh'"):
        parse_info("sh", "page.md:1")
    with pytest.raises(SnippetError, match="bash blocks take no 'sever'"):
        parse_info("bash sever", "page.md:1")
    assert parse_info("python file=a/b.py", "page.md:1")[2] == {"file": "a/b.py"}


HANDLED = {
    ("text", ()),
    ("dotenv", ()),
    ("diff", ()),
    ("bash", ()),
    ("bash", ("ci",)),
    ("bash", ("project",)),
    ("bash", ("postgres",)),
    ("bash", ("serve",)),
    ("bash", ("a2a",)),  # tests/docs/test_a2a_snippets.py
    ("bash", ("adapted",)),
    ("python", ()),
    ("python", ("file",)),
    ("python", ("postgres",)),
    ("python", ("server",)),
    ("python", ("a2a",)),  # tests/docs/test_a2a_snippets.py
    ("mermaid", ()),  # tests/docs/test_graph_diagram.py: the drawing of the built graph
}
"""Each kind of block a test below carries out; a block of any other kind would be skipped."""


def test_every_block_is_of_a_kind_a_test_carries_out() -> None:
    for snippet in SNIPPETS:
        kind = (snippet.language, tuple(sorted(snippet.words | set(snippet.options))))
        assert kind in HANDLED, f"{snippet.id}: no test runs a {kind} block"


def test_the_exit_code_table_lists_every_exit_code_once() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", page, re.MULTILINE)
    assert [int(code) for code, _ in rows] == sorted(code.value for code in ExitCode)


# -- blocks that are not code ------------------------------------------------------------


def _subcommands(command: Any) -> dict[str, Any]:
    """A group's commands by name (typer's own click has no public Group type to check)."""
    return dict(getattr(command, "commands", {}))


@pytest.mark.parametrize("snippet", chosen("text"))
def test_a_synopsis_names_only_commands_and_options_the_cli_has(snippet: Snippet) -> None:
    group = typer.main.get_command(cli)
    for line in re.sub(r"\\\n\s*", " ", snippet.text).splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "handoff":
            continue
        command: Any = group
        for word in words[1:]:
            if _subcommands(command) and not word.startswith("-"):
                found = _subcommands(command).get(word)
                assert found is not None, f"{snippet.id}: no command {word!r} in {line!r}"
                command = found
        assert command is not group, f"{snippet.id}: {line!r} names no command"
        known = {opt for param in command.params for opt in getattr(param, "opts", [])}
        known |= {opt for param in group.params for opt in getattr(param, "opts", [])}
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
            assert option in known, f"{snippet.id}: {command.name} has no {option}"


@pytest.mark.parametrize("snippet", chosen("dotenv"))
def test_a_settings_block_is_settings_handoff_reads(snippet: Snippet, tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(snippet.text, encoding="utf-8")
    names = [line.split("=", 1)[0] for line in snippet.text.splitlines() if "=" in line]
    fields = {f"HANDOFF_{name.upper()}" for name in Settings.model_fields}
    assert set(names) <= fields, f"{snippet.id}: not settings: {set(names) - fields}"
    settings = Settings(_env_file=dotenv)  # type: ignore[call-arg]
    with_agents = set(agent_nodes(spec for spec, _ in WIRING))
    assert set(settings.agent_models) <= with_agents, f"{snippet.id}: nodes without an agent"


# -- shell and Python blocks -------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("snippet", chosen("bash"))
def test_a_shell_block_runs(snippet: Snippet, tmp_path: Path) -> None:
    succeeded(bash(snippet.text, tmp_path, reader_env()), snippet)


@pytest.mark.e2e
@pytest.mark.parametrize("snippet", chosen("bash", having="project"))
def test_a_project_block_runs_in_the_project_and_its_last_line_works(
    snippet: Snippet, tmp_path: Path
) -> None:
    """Run in the checkout as a reader would, its data kept out of the checkout."""
    env = reader_env(HANDOFF_DATA_DIR=str(tmp_path / "data"))
    env["PATH"] = SYSTEM_PATH  # a fresh shell: the project's environment not activated
    result = bash(snippet.text, ROOT, env)
    succeeded(result, snippet)
    if "make demo" in snippet.text:  # the article first: prose, then the Sources it cites
        lines = result.stdout.splitlines()
        title = next(at for at, line in enumerate(lines) if line.startswith("# "))
        end = next(at for at, line in enumerate(lines) if line.startswith("thread: "))
        article = "\n".join(lines[title:end])
        assert "\n## Sources\n\n- src-" in article, article
    last = result.stdout.strip().splitlines()[-1]
    command = last.split(":", 1)[1].strip()  # "read it: <command>"
    shown = bash(command, ROOT, env)
    assert shown.returncode == 0 and shown.stdout.startswith("# "), (last, shown.stderr)


@pytest.mark.e2e
@pytest.mark.parametrize("snippet", chosen("bash", having="postgres", marks=("postgres",)))
def test_a_postgres_shell_block_runs_on_postgres(snippet: Snippet, tmp_path: Path) -> None:
    with postgres_schema("handoff_doc") as url:
        result = bash(snippet.text, tmp_path, reader_env(HANDOFF_DATABASE_URL=url))
    succeeded(result, snippet)


@pytest.mark.parametrize("snippet", chosen("bash", having="ci"))
def test_the_test_command_is_the_one_ci_runs(snippet: Snippet) -> None:
    [command] = [line.split("#", 1)[0].strip() for line in snippet.text.splitlines()]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    steps = [line.strip() for line in ci if line.strip() and not line.startswith("#")]
    assert steps[-1] == command, f".ci/run ends with {steps[-1]!r}, the page says {command!r}"


def python(snippet: Snippet, cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The block saved as a script and run by the project's Python in ``cwd``."""
    script = cwd.parent / f"{cwd.name}-snippet.py"
    script.write_text(snippet.text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *argv],
        cwd=cwd,
        env=reader_env(PYTHONPATH=str(ROOT), **env),
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )


@pytest.mark.e2e
@pytest.mark.parametrize("snippet", chosen("python"))
def test_a_python_block_runs(snippet: Snippet, tmp_path: Path) -> None:
    succeeded(python(snippet, tmp_path), snippet)


@pytest.mark.e2e
@pytest.mark.parametrize("snippet", chosen("python", having="postgres", marks=("postgres",)))
def test_a_postgres_python_block_runs_on_postgres(snippet: Snippet, tmp_path: Path) -> None:
    with postgres_schema("handoff_doc") as url:
        succeeded(python(snippet, tmp_path, HANDOFF_DATABASE_URL=url), snippet)


# -- blocks that start the server --------------------------------------------------------

_API = re.compile(r"API:\s+(http://[\w.:\[\]-]+)")
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


@contextmanager
def serving(script: str, folder: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Run a block that starts the dev server in ``folder``; yield the API URL it prints."""
    server_folder(folder)
    log = folder / "serve.log"
    process = start_block(script, folder, reader_env(), log)
    try:
        began = time.monotonic()
        url = None
        while time.monotonic() - began < SERVER_READY_SECONDS:
            assert process.poll() is None, f"exited {process.returncode}:\n{log.read_text()}"
            output = _COLOUR.sub("", log.read_text(encoding="utf-8", errors="replace"))
            found = _API.search(output)
            if found:
                url = found.group(1)
                try:
                    with urllib.request.urlopen(f"{url}/ok", timeout=1) as response:
                        if response.status == 200:
                            break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
            time.sleep(0.2)
        else:
            pytest.fail(
                f"no server answered within {SERVER_READY_SECONDS:.0f}s:\n{log.read_text()}"
            )
        assert url is not None
        yield url, process
    finally:
        stop_group(process)


def start_block(script: str, folder: Path, env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    """A block that starts a server, run in its own process group, its output in ``log``."""
    with log.open("w", encoding="utf-8") as sink:
        return subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=folder,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )


def stop_group(process: subprocess.Popen[str]) -> None:
    """End a block's process group: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


@pytest.mark.server
@pytest.mark.xdist_group("the-default-server-port")  # each block asks for port 2024: one at a time
@pytest.mark.parametrize("snippet", chosen("bash", having="serve"))
def test_a_serve_block_starts_a_server_that_answers(snippet: Snippet, tmp_path: Path) -> None:
    with serving(snippet.text, tmp_path) as (url, _):
        with urllib.request.urlopen(f"{url}/assistants/search", data=b"{}", timeout=10) as reply:
            assert b'"graph_id":"handoff"' in reply.read().replace(b" ", b"")


@pytest.mark.server
@pytest.mark.parametrize("snippet", chosen("python", having="server"))
def test_a_client_block_drives_the_server_handoff_serve_started(
    snippet: Snippet, tmp_path: Path
) -> None:
    folder = tmp_path / "served"  # on a free port: the serve blocks' tests ask for the default
    with serving(f"handoff serve --port {free_port()}", folder) as (url, _):
        result = python(snippet, folder, url)
    succeeded(result, snippet)
    assert "TASK_STATE_COMPLETED" in result.stdout


# -- the adaptation walk-through ---------------------------------------------------------

WALKTHROUGHS = sorted(
    {(s.document, s.section) for s in SNIPPETS if s.has("adapted") or "file" in s.options}
)
"""Each ``## `` section that changes the project, applied to a fresh copy of its own."""
MOST_FILES, MOST_PLACES = 3, 6
"""What one adaptation may cost: production files touched, and places in them."""
PLACES = re.compile(r"\*\*(\d+)\s+places?\s+in\s+(\d+)\s+files?\*\*")


def _walkthrough_id(walkthrough: tuple[Path, str]) -> str:
    return f"{walkthrough[0].name}: {walkthrough[1]}"


def _apply(snippet: Snippet, copy: Path) -> None:
    if snippet.language == "diff":
        patch = subprocess.run(
            ["patch", "-p1", "--forward", "--no-backup-if-mismatch"],
            input=snippet.text,
            cwd=copy,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert patch.returncode == 0, f"{snippet.id} does not apply:\n{patch.stdout}{patch.stderr}"
    else:
        target = copy / snippet.options["file"]
        assert not target.exists(), f"{snippet.id}: {target.name} exists; the page says new file"
        target.write_text(snippet.text, encoding="utf-8")


@pytest.mark.parametrize("walkthrough", WALKTHROUGHS, ids=_walkthrough_id)
def test_a_walkthrough_costs_few_places_and_says_how_many(walkthrough: tuple[Path, str]) -> None:
    page, section = walkthrough
    blocks = [s for s in SNIPPETS if (s.document, s.section) == walkthrough]
    files, places = touched(blocks)
    assert len(files) <= MOST_FILES and places <= MOST_PLACES, (
        f"{section!r} touches {places} places in {len(files)} files ({sorted(files)}); "
        f"an adaptation may cost {MOST_PLACES} places in {MOST_FILES} files"
    )
    prose = section_prose(page, section)
    stated = PLACES.search(prose)
    assert stated and (int(stated[1]), int(stated[2])) == (places, len(files)), (
        f"{section!r} must say **{places} places in {len(files)} files**; it says "
        f"{stated[0] if stated else 'nothing'}"
    )
    unnamed = sorted(name for name in files if f"`{name}`" not in prose)
    assert not unnamed, f"{section!r} changes {unnamed} without naming them in its text"


WIRING_MODULE = "graphs/graph.py"
"""The one file under graphs/ an adaptation edits; it may add modules of its own there."""


@pytest.mark.parametrize("walkthrough", WALKTHROUGHS, ids=_walkthrough_id)
def test_a_walkthrough_edits_no_file_under_graphs_but_the_wiring_and_the_modules_it_adds(
    walkthrough: tuple[Path, str],
) -> None:
    blocks = [s for s in SNIPPETS if (s.document, s.section) == walkthrough]
    added = {block.options["file"] for block in blocks if "file" in block.options}
    files, _ = touched(blocks)
    edited = sorted(name for name in files - added - {WIRING_MODULE} if name.startswith("graphs/"))
    assert not edited, (
        f"{walkthrough[1]!r} edits {edited}: an adaptation changes no node, tool or runtime "
        f"module the template ships, only {WIRING_MODULE} and the modules it adds; make the "
        "framework take the change from the wiring instead"
    )


@pytest.mark.e2e
@pytest.mark.parametrize("walkthrough", WALKTHROUGHS, ids=_walkthrough_id)
def test_a_walkthrough_applied_to_a_copy_of_the_project_runs(
    walkthrough: tuple[Path, str], tmp_path: Path
) -> None:
    page, section = walkthrough
    copy = tmp_path / "project"
    copy.mkdir()
    for name in PROJECT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / name)
    steps = [s for s in SNIPPETS if (s.document, s.section) == walkthrough]
    ran = 0
    for snippet in steps:
        if snippet.language == "diff" or "file" in snippet.options:
            _apply(snippet, copy)
        elif snippet.has("adapted"):
            succeeded(bash(snippet.text, copy, reader_env(PYTHONPATH=str(copy))), snippet)
            ran += 1
    assert ran, f"{page.name}, {section!r} changes the project but runs nothing afterwards"


def test_every_setting_is_in_env_example_and_the_configuration_table_and_nothing_else() -> None:
    fields = {f"HANDOFF_{name.upper()}" for name in Settings.model_fields}
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    listed = set(re.findall(r"^#?\s*(HANDOFF_[A-Z_]+)=", example, re.MULTILINE))
    table = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(HANDOFF_[A-Z_]+)` \|", table, re.MULTILINE))
    assert listed == fields, f".env.example: missing {fields - listed}, unknown {listed - fields}"
    assert documented == fields, (
        f"docs/configuration.md: missing {fields - documented}, unknown {documented - fields}"
    )
