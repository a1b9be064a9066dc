"""Damaged and full storage: one line, its own exit code, and nothing saved is lost.

Every file here is real: SQLite databases garbled, truncated or emptied on disk, a real
full disk (a small tmpfs), and the CLI in its own process.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import shutil
import subprocess
from collections.abc import Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from app.errors import StorageDamaged
from app.exit_codes import ExitCode
from app.settings import Settings
from app.storage import sqlite_files
from app.workflow import Workflow
from tests.cli import handoff, one_line_error
from tests.conftest import OBJECTIVE

PAGE = 4096


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder holding one finished thread, ``t-saved``; copied before it is damaged."""
    data = tmp_path_factory.mktemp("saved") / "data"
    result = handoff("run", OBJECTIVE, "--thread", "t-saved", data_dir=data)
    assert result.returncode == ExitCode.COMPLETED, result.stderr
    return data


@pytest.fixture
def store(saved: Path, tmp_path: Path) -> Path:
    """A copy of the saved data folder this test may damage."""
    return Path(shutil.copytree(saved, tmp_path / "data"))


def _garble_header(db: Path) -> None:
    content = bytearray(db.read_bytes())
    content[:100] = bytes(range(7, 107))
    db.write_bytes(bytes(content))


def _truncate(db: Path) -> None:
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)


def _garble_pages(db: Path) -> None:
    """Keep page 1 (header and schema) and the length; overwrite every other page."""
    content = bytearray(db.read_bytes())
    for offset in range(PAGE, len(content), PAGE):
        content[offset : offset + PAGE] = bytes([0xA5]) * PAGE
    db.write_bytes(bytes(content))


def _empty(db: Path) -> None:
    db.write_bytes(b"")


DAMAGES = {
    "garbled header": _garble_header,
    "truncated": _truncate,
    "garbled pages": _garble_pages,
    "emptied": _empty,
}


def _fingerprint(path: Path) -> tuple[int, str]:
    return path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()


def _assert_refused_as_damaged(result: subprocess.CompletedProcess[str], db: Path) -> None:
    assert result.returncode == ExitCode.STORAGE_DAMAGED, result.stderr
    line = one_line_error(result)
    assert str(db) in line and "damaged" in line, line
    assert "backup" in line, "the line says what to do"


@pytest.mark.e2e
@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_database_is_refused_with_one_line_and_left_as_it_was(
    store: Path, damage: str
) -> None:
    db = store / "handoff.db"
    DAMAGES[damage](db)
    before = _fingerprint(db)
    for command in (["threads"], ["run", OBJECTIVE, "--thread", "t-new"]):
        result = handoff(*command, data_dir=store)
        _assert_refused_as_damaged(result, db)
        assert _fingerprint(db) == before, f"{command[0]} wrote to the damaged file"


@pytest.mark.e2e
def test_every_command_refuses_a_garbled_database_without_writing_to_it(store: Path) -> None:
    db = store / "handoff.db"
    _garble_header(db)
    before = _fingerprint(db)
    commands = [
        ["status", "t-saved"],
        ["history", "t-saved"],
        ["show", "t-saved"],
        ["resume", "t-saved"],
        ["db", "init"],
    ]
    for command in commands:
        _assert_refused_as_damaged(handoff(*command, data_dir=store), db)
    assert _fingerprint(db) == before
    debug = handoff("--debug", "status", "t-saved", data_dir=store)
    assert debug.returncode == ExitCode.STORAGE_DAMAGED
    assert "Traceback" in debug.stderr, "--debug adds the traceback"


@pytest.mark.parametrize("evidence", ["lock folder", "artifacts", "wal"])
def test_an_emptied_database_is_damage_when_the_store_beside_it_was_used(
    store: Path, evidence: str
) -> None:
    db = store / "handoff.db"
    db.write_bytes(b"")
    locks, artifacts = sqlite_files.lock_folder(db), store / "artifacts"
    if evidence != "lock folder":
        shutil.rmtree(locks)
    if evidence != "artifacts":
        shutil.rmtree(artifacts)
    if evidence == "wal":
        db.with_name("handoff.db-wal").write_bytes(b"\x37\x7f\x06\x82" + bytes(PAGE))
    with pytest.raises(StorageDamaged, match="empty"):
        sqlite_files.check_file(db, artifacts)
    beside = Settings(data_dir=store, artifact_store="filesystem")  # the folder the test empties
    with pytest.raises(StorageDamaged), Workflow(beside, read_only=True):
        pass
    assert db.stat().st_size == 0


@pytest.mark.e2e
def test_an_empty_file_in_an_unused_folder_is_a_new_database(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "handoff.db").write_bytes(b"")
    result = handoff("run", OBJECTIVE, "--thread", "t-first", data_dir=data)
    assert result.returncode == ExitCode.COMPLETED, result.stderr


@pytest.mark.e2e
def test_a_fresh_start_with_no_file_works(tmp_path: Path) -> None:
    threads = handoff("threads", data_dir=tmp_path / "new")
    assert threads.returncode == ExitCode.COMPLETED, threads.stderr
    assert threads.stdout == ""


def test_a_new_database_is_made_with_its_pages_of_page_size(tmp_path: Path) -> None:
    database = tmp_path / "data" / "handoff.db"
    sqlite_files.connect(database).close()
    assert int.from_bytes(database.read_bytes()[16:18], "big") == sqlite_files.PAGE_SIZE != PAGE


def _open_at_once(db: Path, artifacts: Path, barrier: Barrier, failures: Queue[str]) -> None:
    barrier.wait()
    try:
        sqlite_files.connect(db, artifact_dir=artifacts).close()
    except StorageDamaged as error:
        failures.put(error.message)


@pytest.mark.slow
def test_processes_creating_the_database_at_once_never_see_each_others_file_as_damaged(
    store: Path,
) -> None:
    """The artifacts say the store was used, so a 0-byte database would count as damage.

    Each round removes the database and lets several processes create it at the same
    moment: none may catch another's file half-made.
    """
    db, artifacts = store / "handoff.db", store / "artifacts"
    shutil.rmtree(sqlite_files.lock_folder(db))
    context = multiprocessing.get_context("fork")
    failures: Queue[str] = context.Queue()
    for _ in range(15):
        for leftover in store.glob("handoff.db*"):
            leftover.unlink()
        barrier = context.Barrier(6)
        workers = [
            context.Process(target=_open_at_once, args=(db, artifacts, barrier, failures))
            for _ in range(6)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
            assert worker.exitcode == 0
        assert failures.empty(), failures.get()
        assert db.stat().st_size > 0
    assert not list(store.glob(".handoff.db.*")), "no temporary file is left behind"


# -- a full disk -----------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs: a real filesystem that really fills up (needs root, or is skipped).

    RLIMIT_FSIZE is no stand-in: the process gets EFBIG (and SIGXFSZ), which SQLite
    reports as an I/O error, not as SQLITE_FULL.
    """
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int = 0) -> Path:
    """Fill the disk up to ``leave`` bytes with one file; delete the file to free the space."""
    filler = disk / "filler"
    with contextlib.suppress(FileNotFoundError):
        filler.unlink()
    stat = os.statvfs(disk)
    size = max(0, stat.f_bavail * stat.f_frsize - leave)
    with filler.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
        handle.write(bytes(size))
        while not leave:  # the last blocks the count did not show
            handle.write(bytes(PAGE))
    return filler


def _assert_reads_work(data: Path, thread: str, *, every: bool = True) -> None:
    """``status`` and ``show`` (and, if ``every``, ``threads`` and ``history``) succeed."""
    commands = [["status", thread], ["show", thread, "--artifact", "notes"]]
    if every:
        commands += [["threads"], ["history", thread]]
    for command in commands:
        result = handoff(*command, data_dir=data)
        assert result.returncode == ExitCode.COMPLETED, (command, result.stderr)
        assert result.stdout.strip()


@pytest.mark.e2e
def test_a_full_disk_stops_a_run_with_one_line_and_the_thread_resumes_once_space_is_freed(
    small_disk: Path, saved: Path
) -> None:
    data = small_disk / "data"
    paused = handoff("run", OBJECTIVE, "--thread", "t-full", "--require-approval", data_dir=data)
    assert paused.returncode == ExitCode.WAITING_FOR_HUMAN, paused.stderr

    filler = _fill(small_disk)
    _assert_reads_work(data, "t-full")  # the database was closed: no WAL index exists
    refused = handoff("run", OBJECTIVE, "--thread", "t-other", data_dir=data)
    assert refused.returncode == ExitCode.STORAGE_FULL, refused.stderr

    _fill(small_disk, leave=200 * 1024)  # room to start, not to finish
    stopped = handoff("resume", "t-full", "--approve", data_dir=data)
    assert stopped.returncode == ExitCode.STORAGE_FULL, stopped.stderr
    line = one_line_error(stopped)
    assert "no space left" in line and str(data) in line, line

    _fill(small_disk)
    _assert_reads_work(data, "t-full", every=False)  # with the WAL the stopped run left

    filler.unlink()
    resumed = handoff("resume", "t-full", data_dir=data)
    if resumed.returncode == ExitCode.WAITING_FOR_HUMAN:  # stopped before the decision held
        resumed = handoff("resume", "t-full", "--approve", data_dir=data)
    assert resumed.returncode == ExitCode.COMPLETED, resumed.stderr
    with (
        Workflow(Settings(data_dir=data), read_only=True) as stopped_once,
        Workflow(Settings(data_dir=saved), read_only=True) as never_stopped,
    ):
        article = stopped_once.artifact("t-full", "article")
        assert article == never_stopped.artifact("t-saved", "article")


@pytest.mark.e2e
def test_checking_a_file_never_releases_the_locks_of_a_connection_in_this_process(
    tmp_path: Path,
) -> None:
    """POSIX drops a process's locks on a file when any descriptor of it is closed."""
    import sqlite3
    import subprocess
    import sys

    from app.storage.sqlite_files import check_file

    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")  # a write lock, as a run in progress holds
    try:
        check_file(path)
        check_file(path)
        other = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=0, "
            "isolation_level=None)\n"
            "try:\n    c.execute('BEGIN IMMEDIATE'); print('got the lock')\n"
            "except sqlite3.OperationalError as e:\n    print(e)"
        )
        answer = subprocess.run(
            [sys.executable, "-c", other, str(path)], capture_output=True, text=True, timeout=30
        )
        assert answer.stdout.strip() == "database is locked", answer
    finally:
        holder.execute("ROLLBACK")
        holder.close()
