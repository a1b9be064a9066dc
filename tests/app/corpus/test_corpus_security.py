"""Run input names files, so nothing outside the corpus roots is ever read.

Every case is real: symlinks, a FIFO, /dev/zero, files over the limit, files that are not
UTF-8. A refused corpus is refused before the thread exists (exit code 2, one line); a
source re-pointed later (as the dev server's ``update_state`` allows) is refused when it is
re-checked, and the thread's stale policy handles it. Cases that used to hang run in a
subprocess with a timeout.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from app.corpus.discovery import discover
from app.corpus.reading import SUFFIXES, CorpusPolicy, real_path
from app.exit_codes import for_error, for_outcome
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from contracts import ErrorCode, ResearchBundle, RunOutcome, TaskState
from graphs.errors import ExitCode, SourceRefused
from tests import forked
from tests.backends import backend_env, sqlite_settings
from tests.cli import handoff as handoff_cli
from tests.conftest import OBJECTIVE, write_corpus

SUBPROCESS_SECONDS = 60
SECRET = "The Rosetta Stone was found in 1799; the vault password is hunter2.\n"
ROSETTA = "the-rosetta-stone.md"


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder beside this test's own, outside every corpus root, with a tempting .md."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "secret.md").write_text(SECRET, encoding="utf-8")
    return folder


def door_case(case: str, root: Path, outside: Path) -> tuple[list[str], list[str]]:
    """A corpus (inside ``root``) for one refused case, and what its error must name."""
    corpus = write_corpus(root / "corpus", {"bees.md": "Honey bees dance.\n"})
    if case == "symlink_to_etc_passwd":
        (corpus / "passwd.md").symlink_to("/etc/passwd")
        return [str(corpus)], ["passwd.md", "/etc/passwd", "outside the corpus roots"]
    if case == "symlink_to_md_outside_roots":
        (corpus / "secret.md").symlink_to(outside / "secret.md")
        return [str(corpus)], ["secret.md", "outside the corpus roots"]
    if case == "folder_link_outside_roots":
        (corpus / "more").symlink_to(outside, target_is_directory=True)
        return [str(corpus)], [f"corpus folder {corpus / 'more'}", "outside the corpus roots"]
    if case == "absolute_path_outside_roots":
        target = str(outside / "secret.md")
        return [target], [f"corpus path {target} is outside the corpus roots"]
    if case == "dev_zero":
        return ["/dev/zero"], ["corpus path /dev/zero is outside the corpus roots"]
    if case == "fifo":
        os.mkfifo(corpus / "pipe.md")
        return [str(corpus)], [f"corpus file {corpus / 'pipe.md'} is a FIFO"]
    if case == "fifo_named_directly":
        os.mkfifo(root / "pipe.md")
        return [str(root / "pipe.md")], [f"corpus file {root / 'pipe.md'} is a FIFO"]
    if case == "oversized_file":
        (corpus / "big.md").write_bytes(b"bees " * 400)
        return [str(corpus)], ["big.md is 2,000 bytes, over the limit of 1,000"]
    if case == "symlink_loop_in_folder":
        (corpus / "a.md").symlink_to(corpus / "b.md")
        (corpus / "b.md").symlink_to(corpus / "a.md")
        return [str(corpus)], [f"corpus file {corpus}/", ".md is a symlink loop"]
    if case == "link_to_itself_named_directly":
        (root / "self.md").symlink_to(root / "self.md")
        return [str(root / "self.md")], [f"corpus path {root / 'self.md'} is a symlink loop"]
    if case == "missing_inside_roots":
        return [str(root / "absent")], [f"corpus path {root / 'absent'} does not exist"]
    if case == "missing_outside_roots":
        gone = outside / "gone" / "notes"
        return [str(gone)], [f"corpus path {gone} does not exist", "name an existing folder"]
    other = root / "other"  # beside the corpus, holding none of its documents
    if case == "only_formats_not_read":
        other.mkdir()
        for name in ("manual.pdf", "notes.docx", "diagram.png"):
            (other / name).write_bytes(b"%PDF-1.4 not text")
        listed = ", ".join(str(other / n) for n in ("diagram.png", "manual.pdf", "notes.docx"))
        return [str(other)], [f"holds no document this workflow reads, only {listed}", SUFFIXES]
    if case == "empty_folder":
        other.mkdir()
        return [str(other)], [f"corpus {other} holds no document; supported formats: {SUFFIXES}"]
    if case == "format_not_read_named_directly":
        (root / "slides.pdf").write_bytes(b"%PDF-1.4")
        return [str(root / "slides.pdf")], [f"{root / 'slides.pdf'} is not a document", SUFFIXES]
    raise AssertionError(case)


DOOR_CASES = [
    "symlink_to_etc_passwd",
    "symlink_to_md_outside_roots",
    "folder_link_outside_roots",
    "absolute_path_outside_roots",
    "dev_zero",
    "fifo",
    "fifo_named_directly",
    "oversized_file",
    "symlink_loop_in_folder",
    "link_to_itself_named_directly",
    "missing_inside_roots",
    "missing_outside_roots",
    "only_formats_not_read",
    "empty_folder",
    "format_not_read_named_directly",
]


@pytest.mark.parametrize("case", DOOR_CASES)
def test_a_refused_corpus_is_refused_at_run_with_one_line_exit_code_2_and_nothing_saved(
    settings: Settings, tmp_path: Path, outside: Path, case: str
) -> None:
    locations, named = door_case(case, tmp_path, outside)
    with Workflow(settings.with_overrides(corpus_max_bytes=1000)) as workflow:
        task = workflow.task(OBJECTIVE, corpus=locations)
        with pytest.raises(SourceRefused) as refused:
            workflow.run(task, "t-door")
        message = refused.value.message
        assert "\n" not in message
        for part in named:
            assert part in message
        if "outside the corpus roots" in message:
            assert str(BUNDLED_CORPUS.resolve()) in message, "the roots are named"
        assert for_error(refused.value) == ExitCode.USAGE
        assert "t-door" not in workflow.threads(), "no thread was saved"
        assert workflow.ledger.runs("t-door") == [], "no attempt was recorded"
        assert workflow.context.store.head("t-door-notes") is None
        assert workflow.context.store.head("t-door-src-1") is None, "nothing was read"


def test_a_symlink_inside_the_roots_to_a_file_inside_them_is_read(
    workflow: Workflow, tmp_path: Path
) -> None:
    library = tmp_path / "library"
    shutil.copytree(BUNDLED_CORPUS, library)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "stone.md").symlink_to(library / ROSETTA)
    outcome = workflow.run(workflow.task(OBJECTIVE, corpus=[str(corpus)]), "t-link")
    assert outcome.result_status == "completed"
    bundle = workflow.state("t-link")["research"]
    assert [source.uri for source in bundle.sources] == [(library / ROSETTA).as_uri()]


def test_a_document_that_is_not_utf8_is_named_and_the_run_ends_failed(
    workflow: Workflow, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "binary.md").write_bytes(b"\xff\xfe\x00 Rosetta Stone")
    outcome = workflow.run(workflow.task(OBJECTIVE, corpus=[str(corpus)]), "t-binary")
    assert outcome.state == TaskState.FAILED and for_outcome(outcome) == ExitCode.FAILED
    unreadable = [error for error in outcome.errors if error.code == ErrorCode.SOURCE_UNREADABLE]
    assert unreadable, outcome.errors
    assert "binary.md is not UTF-8 text (byte 0xff at offset 0)" in unreadable[0].detail
    assert "not UTF-8" in (outcome.reason or "")


def test_a_file_growing_past_the_limit_while_read_is_cut_off_at_the_limit(tmp_path: Path) -> None:
    # /proc files report a size of 0 and hold more: only the read itself can bound them.
    policy = CorpusPolicy(roots=(Path("/proc").resolve(),), max_bytes=64, read_seconds=5)
    with pytest.raises(SourceRefused, match="grew past the limit of 64 bytes"):
        policy.read(Path("/proc/self/maps"))


def test_a_read_slower_than_the_time_limit_is_given_up(tmp_path: Path) -> None:
    (tmp_path / "long.md").write_bytes(b"bees " * 600_000)  # three read chunks
    policy = CorpusPolicy(roots=(tmp_path.resolve(),), max_bytes=10_000_000, read_seconds=1e-9)
    with pytest.raises(SourceRefused, match=r"took over 1e-09 s \(HANDOFF_CORPUS_READ_SECONDS\)"):
        policy.read(tmp_path / "long.md")


def test_roots_are_the_bundled_corpus_and_the_working_folder_widened_by_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, extra = tmp_path / "here", tmp_path / "extra"
    here.mkdir()
    write_corpus(extra, {"bees.md": "Honey bees dance.\n"})
    monkeypatch.chdir(here)
    default = Settings(_env_file=None).corpus_policy()  # type: ignore[call-arg]
    assert default.roots == (BUNDLED_CORPUS.resolve(), here.resolve())
    assert default.max_bytes == 10_000_000 and default.read_seconds == 10
    with pytest.raises(SourceRefused, match="outside the corpus roots"):
        discover([extra], default)
    monkeypatch.setenv("HANDOFF_CORPUS_ROOTS", json.dumps([str(extra)]))
    widened = Settings(_env_file=None).corpus_policy()  # type: ignore[call-arg]
    assert widened.roots[-1] == extra.resolve()
    assert [document.path.name for document in discover([extra], widened)] == ["bees.md"]


# -- sources re-read when a thread resumes ---------------------------------------------


def repoint_target(target: str, root: Path, outside: Path) -> tuple[str, str]:
    """A URI for a source to be re-pointed at, and what its refusal must say."""
    if target == "dev_zero":
        return "file:///dev/zero", "source /dev/zero is outside the corpus roots"
    if target == "md_outside_roots":
        path = outside / "secret.md"
        return path.as_uri(), f"source {path} is outside the corpus roots"
    if target == "fifo":
        os.mkfifo(root / "pipe.md")
        return (root / "pipe.md").as_uri(), f"source {root / 'pipe.md'} is a FIFO"
    if target == "directory":
        (root / "folder.md").mkdir()
        return (root / "folder.md").as_uri(), f"source {root / 'folder.md'} is a folder"
    raise AssertionError(target)


def repointed(workflow: Workflow, thread_id: str, policy: str, uri: str) -> ResearchBundle:
    """A thread paused for approval whose first source now says it came from ``uri``.

    The change goes through LangGraph's ``update_state``, as a dev-server client's would.
    Returns the bundle as research made it.
    """
    task = workflow.task(OBJECTIVE, policies={"require_approval": True, "on_stale": policy})
    assert workflow.run(task, thread_id).state == TaskState.INPUT_REQUIRED
    bundle: ResearchBundle = workflow.state(thread_id)["research"]
    first = bundle.sources[0].model_copy(update={"uri": uri})
    changed = bundle.model_copy(update={"sources": [first, *bundle.sources[1:]]})
    workflow.graph.update_state(workflow.config(thread_id), {"research": changed})
    return bundle


def approve(workflow: Workflow, thread_id: str) -> RunOutcome:
    request = workflow.pending(thread_id)
    assert request is not None
    return workflow.resume(thread_id, {"interrupt_id": request.interrupt_id, "action": "approve"})


@pytest.mark.parametrize(
    ("target", "policy"),
    [
        ("dev_zero", "fail"),
        ("dev_zero", "ask"),
        ("dev_zero", "reevaluate"),
        ("md_outside_roots", "fail"),
        ("fifo", "fail"),
        ("directory", "fail"),
    ],
)
def test_a_source_repointed_before_resume_is_refused_by_name_and_the_policy_handles_it(
    workflow: Workflow, tmp_path: Path, outside: Path, target: str, policy: str
) -> None:
    uri, refusal = repoint_target(target, tmp_path, outside)
    before = repointed(workflow, "t-repoint", policy, uri)
    assert workflow.resume("t-repoint").state == TaskState.INPUT_REQUIRED, "asks approval again"
    checkpoints = workflow.checkpoint_count("t-repoint")
    outcome = approve(workflow, "t-repoint")

    writer = next(run for run in workflow.history("t-repoint") if run.node_id == "writer")
    assert any(refusal in line for line in writer.checked_inputs), writer.checked_inputs
    if policy == "fail":
        assert outcome.state == TaskState.REJECTED and for_outcome(outcome) == ExitCode.FAILED
        assert outcome.errors[0].code == ErrorCode.STALE_INPUT
        assert "source src-1 is missing" in outcome.errors[0].detail
        assert refusal in outcome.errors[0].detail and "\n" not in outcome.errors[0].detail
    elif policy == "ask":
        request = outcome.human_request
        assert request is not None and request.request_kind == "stale_input"
        assert "accept_new_revision" not in request.allowed_actions
        assert any(refusal in change for change in request.changes)
        ended = workflow.resume(
            "t-repoint",
            {"interrupt_id": request.interrupt_id, "action": "abort", "reason": "bad source"},
        )
        assert ended.state == TaskState.CANCELED
    else:
        assert outcome.human_request is not None, "research re-ran and asks for approval again"
        assert approve(workflow, "t-repoint").result_status == "completed"
        fresh = workflow.state("t-repoint")["research"]
        assert all(source.uri.startswith(BUNDLED_CORPUS.as_uri()) for source in fresh.sources)
    assert workflow.checkpoint_count("t-repoint") > checkpoints, "nothing saved was lost"
    for source in before.sources:
        assert workflow.context.store.get(source.snapshot), "the snapshots are still there"


def test_a_thread_whose_corpus_left_the_roots_is_refused_on_resume_and_goes_on_once_allowed(
    settings: Settings, tmp_path: Path
) -> None:
    corpus = Path(shutil.copytree(BUNDLED_CORPUS, tmp_path / "corpus"))
    with Workflow(settings) as workflow:
        policies = {"require_approval": True}
        task = workflow.task(OBJECTIVE, corpus=[str(corpus)], policies=policies)
        assert workflow.run(task, "t-narrowed").state == TaskState.INPUT_REQUIRED
        request = workflow.pending("t-narrowed")
        assert request is not None
    decision = {"interrupt_id": request.interrupt_id, "action": "approve"}
    with Workflow(settings.with_overrides(corpus_roots=[])) as narrowed:
        checkpoints = narrowed.checkpoint_count("t-narrowed")
        with pytest.raises(SourceRefused, match="outside the corpus roots") as refused:
            narrowed.resume("t-narrowed", decision)
        assert for_error(refused.value) == ExitCode.USAGE and "\n" not in refused.value.message
        assert narrowed.checkpoint_count("t-narrowed") >= checkpoints, "nothing saved was lost"
        assert narrowed.status("t-narrowed").next_nodes == ("research",)
    with Workflow(settings) as allowed:
        assert allowed.resume("t-narrowed").state == TaskState.INPUT_REQUIRED
        assert approve(allowed, "t-narrowed").result_status == "completed"


# -- the CLI, in a subprocess with a timeout: these cases used to hang ----------------------


def handoff(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return forked.run(args, env=env, cwd=cwd, timeout=SUBPROCESS_SECONDS)


@pytest.mark.e2e
@pytest.mark.parametrize(
    "target",
    ["/dev/zero", "pipe.md", "/etc/passwd", "loop.md", "absent", "/absent/notes", "manual.pdf"],
)
def test_handoff_run_on_a_device_fifo_system_file_link_loop_missing_path_or_pdf_exits_2_at_once(
    tmp_path: Path, target: str
) -> None:
    if target == "manual.pdf":
        (tmp_path / target).write_bytes(b"%PDF-1.4")
    if target == "pipe.md":
        os.mkfifo(tmp_path / target)
    if target == "loop.md":
        (tmp_path / target).symlink_to(tmp_path / target)
    env = backend_env(sqlite_settings(tmp_path / "data"))
    result = handoff(tmp_path, env, "run", OBJECTIVE, "--corpus", target, "--thread", "t-cli")
    assert result.returncode == ExitCode.USAGE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: corpus ") and target in lines[0]
    if "absent" in target:
        assert lines[0].endswith(f"does not exist; name an existing folder or {SUFFIXES} file")
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert handoff(tmp_path, env, "status", "t-cli").returncode == ExitCode.NOT_FOUND


@pytest.mark.e2e
@pytest.mark.parametrize("target", ["dev_zero", "fifo"])
def test_handoff_resume_with_a_source_repointed_at_a_device_or_fifo_ends_the_thread_at_once(
    tmp_path: Path, outside: Path, target: str
) -> None:
    settings = sqlite_settings(tmp_path / "data").with_overrides(model="offline", fault=None)
    uri, refusal = repoint_target(target, tmp_path, outside)
    with Workflow(settings) as workflow:
        repointed(workflow, "t-hang", "fail", uri)
    env = backend_env(settings)
    assert handoff(tmp_path, env, "resume", "t-hang").returncode == ExitCode.WAITING_FOR_HUMAN
    result = handoff(tmp_path, env, "resume", "t-hang", "--approve")
    assert result.returncode == ExitCode.FAILED, result.stderr
    assert refusal in result.stdout and "Traceback" not in result.stdout + result.stderr
    status = handoff(tmp_path, env, "status", "t-hang", "--json")
    outcome = json.loads(status.stdout)["outcome"]
    assert outcome["errors"][0]["code"] == ErrorCode.STALE_INPUT


def test_paths_resolve_exactly_as_realpath_resolves_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's answer (O_PATH and /proc) must be realpath's, whatever the path is."""
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "real" / "deep" / "a.md").write_text("a", encoding="utf-8")
    (tmp_path / "to-real").symlink_to(tmp_path / "real")
    (tmp_path / "to-a.md").symlink_to(tmp_path / "real" / "deep" / "a.md")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    os.mkfifo(tmp_path / "fifo.md")
    monkeypatch.chdir(tmp_path)
    paths = [
        "real/deep/a.md",
        tmp_path / "to-real" / "deep" / "a.md",
        tmp_path / "to-real" / "deep" / ".." / "deep" / "a.md",
        tmp_path / "to-a.md",
        tmp_path / "to-real",
        tmp_path / "missing" / "b.md",
        tmp_path / "dangling.md",
        tmp_path / "loop-a",
        tmp_path / "fifo.md",
        Path("/dev/zero"),
    ]
    for path in paths:
        assert real_path(path) == os.path.realpath(path), path


@pytest.mark.e2e
def test_the_refusals_hint_is_a_setting_that_works_as_typed(tmp_path: Path) -> None:
    corpus = write_corpus(
        tmp_path / "elsewhere" / "notes",
        {"bees.md": "# Bees\n\nHoney bees perform the waggle dance to share flowers.\n"},
    )
    args = ("run", "Explain the honey bee waggle dance", "--corpus", str(corpus))
    refused = handoff_cli(*args, "--thread", "t-hint", data_dir=tmp_path / "data")
    assert refused.returncode == ExitCode.USAGE, refused.stderr
    hint = refused.stderr.strip().rsplit("add its folder to the roots: ", 1)[1]
    name, _, value = shlex.split(hint)[0].partition("=")
    assert (name, value) == ("HANDOFF_CORPUS_ROOTS", str(corpus))
    allowed = handoff_cli(
        *args, "--thread", "t-hint", data_dir=tmp_path / "data", env={name: value}
    )
    assert allowed.returncode == ExitCode.COMPLETED, allowed.stderr
    assert "--corpus" in (help_text := handoff_cli("run", "--help").stdout)
    assert "HANDOFF_CORPUS_ROOTS" in help_text
