"""Generated decisions: every one is refused in one line and changes nothing, or is valid.

Two ways in are fuzzed. (a) The graph itself, as a dev-server client reaches it: a
``Command(resume=...)`` on a real SQLite thread waiting at ``approve_research`` and one
waiting at ``review_decision``. Refused resumes follow one another on the waiting thread
(as a retrying client sends them); after an accepted one the thread is restored from a
snapshot of its waiting checkpoint through the saver, so no thread is ever re-run. A dict
whose keys all look like LangGraph interrupt ids (``{}`` too) is LangGraph's resume *map*,
not a decision: naming no pending interrupt, it resumes nothing, which is checked as such.
``None`` is left out: ``Command(resume=None)`` carries no resume at all. (b) The CLI's
parser (``parse_decision``: a decision file plus flags → a checked ``HumanDecision``), run
in-process on generated files and flags, plus a few real ``handoff resume`` processes.

The example counts are the constants below; the ``slow`` tests run the full counts
(10,000 payloads and files: 2 × 1,000 through the graph, 8,000 through the parser), the
unmarked ones a smaller share (700) for ``make check``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.errors import is_invalid_resume
from langgraph.types import Command
from pydantic import ValidationError

from app.cli.decision_hints import ACTIONS as CLI_ACTIONS
from app.cli.decision_hints import PAUSES
from app.cli.decisions import DecisionFlags, parse_decision
from app.settings import Settings
from app.workflow import Workflow
from contracts import DecisionLog, HumanDecision, HumanRequest, TaskState
from graphs.boundary import describe_validation_error
from graphs.decision_schema import decision_schema
from graphs.errors import ExitCode, HandoffError
from graphs.human import as_decision, bound_id, request_in
from tests import forked
from tests.app.test_review_loop import SloppyWriter
from tests.backends import backend_env, sqlite_settings
from tests.conftest import OBJECTIVE

GRAPH_EXAMPLES = 1_000
"""Resumes sent to the graph per waiting node, in the slow test (two nodes: 2,000)."""
GRAPH_EXAMPLES_QUICK = 100
"""The same, per node, in the unmarked test that ``make check`` runs."""
PARSER_EXAMPLES = 8_000
"""Decision files and flag sets given to the CLI parser, in the slow test."""
PARSER_EXAMPLES_QUICK = 500
"""The same in the unmarked test."""

QUESTIONS = ["Who found the Rosetta Stone in 1799?", "What did Champollion eat for lunch?"]
XXH3_HEX = set("0123456789abcdef")


@dataclass
class Waiting:
    """A thread waiting for a decision, and the snapshot its examples start from."""

    workflow: Workflow
    thread_id: str
    node: str
    request: HumanRequest
    checkpoint: Any
    metadata: Any
    writes: list[tuple[str, str, Any]]

    @property
    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": ""}}

    def restore(self) -> None:
        """Put the thread back exactly at its waiting checkpoint (through the saver's API).

        Its audit rows go too: an answered pause recorded there would otherwise be replayed
        (the runner reuses a finished attempt with the same input) instead of asking again.
        """
        database = self.workflow.settings.resolved_database_url().removeprefix("sqlite:///")
        with closing(sqlite3.connect(database)) as conn, conn:
            conn.execute("DELETE FROM handoff_node_runs WHERE thread_id = ?", (self.thread_id,))
        saver = self.workflow.saver
        saver.delete_thread(self.thread_id)
        stored = saver.put(self.config, self.checkpoint, self.metadata, {})
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in self.writes:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            saver.put_writes(stored, writes, task_id)

    @property
    def waiting(self) -> tuple[str, list[Any]]:
        """The head a waiting thread shows: its checkpoint and the request it waits on."""
        return self.checkpoint["id"], [self.request]

    def head(self) -> tuple[str, list[Any]]:
        """The thread's latest checkpoint id and the requests its saved interrupts carry."""
        saved = self.workflow.saver.get_tuple(self.config)
        assert saved is not None
        interrupts = [
            request_in(pending.value)
            for _task, channel, value in saved.pending_writes or []
            if channel == "__interrupt__"
            for pending in value
        ]
        return saved.checkpoint["id"], interrupts


def waiting_at(workflow: Workflow, thread_id: str, node: str) -> Waiting:
    snapshot = workflow.graph.get_state(workflow.config(thread_id))
    assert snapshot.next == (node,), snapshot.next
    request = workflow.pending(thread_id)
    assert request is not None and request.thread_id == thread_id
    saved = workflow.saver.get_tuple(workflow.config(thread_id))
    assert saved is not None
    return Waiting(
        workflow=workflow,
        thread_id=thread_id,
        node=node,
        request=request,
        checkpoint=saved.checkpoint,
        metadata=saved.metadata,
        writes=list(saved.pending_writes or []),
    )


@pytest.fixture(scope="module")
def threads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Waiting]]:
    """One thread waiting at approve_research (with an open question), one at review_decision."""
    folder = tmp_path_factory.mktemp("fuzz")
    chosen: Settings = sqlite_settings(folder / "data").with_overrides(model="offline", fault=None)
    with Workflow(chosen) as plain:
        context = plain.context.with_agent("writer", SloppyWriter(bad_rounds=1))
        with Workflow(chosen, context=context) as workflow:
            approval = workflow.run(
                workflow.task(OBJECTIVE, questions=QUESTIONS, policies={"require_approval": True}),
                "fuzz-approve",
            )
            review = workflow.run(
                workflow.task(
                    OBJECTIVE,
                    budget={"max_review_rounds": 1},
                    policies={"on_review_exhausted": "ask"},
                ),
                "fuzz-review",
            )
            assert approval.state == review.state == TaskState.INPUT_REQUIRED
            yield {
                "approve_research": waiting_at(workflow, "fuzz-approve", "approve_research"),
                "review_decision": waiting_at(workflow, "fuzz-review", "review_decision"),
            }


# ---------------------------------------------------------------------------------------
# What is generated: decisions near the valid ones, and junk far from them.

OTHER_THREADS = ["fuzz-other", "t-0123456789abcdef", "3f1c2a9e-8b7d-4c6e-9a1b-2c3d4e5f6a7b"]
ACTIONS = list(CLI_ACTIONS)
FIELDS = list(HumanDecision.model_fields)


def deep(depth: int, leaf: Any) -> Any:
    """A value nested ``depth`` levels deep in lists and objects, built without recursion."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.binary(max_size=20),
)
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=8,
)
huge = st.one_of(
    st.integers(min_value=2_001, max_value=200_000).map(lambda n: "x" * n),
    st.integers(min_value=21, max_value=5_000).map(lambda n: ["at most 9 words"] * n),
    st.integers(min_value=50, max_value=3_000).map(lambda n: deep(n, "approve")),
    st.just("\udcff\udc80 lone surrogates"),
    st.just(b"\xff\xfe not utf-8"),
)


# Built once: hypothesis spends more time building strategies than drawing from them.
REASONS = st.text(min_size=1, max_size=60).filter(str.strip)
TEXTS = st.text(min_size=1, max_size=40)
CONSTRAINTS = st.lists(TEXTS.filter(str.strip), max_size=3)
DECIDERS = st.text(max_size=20)
UNKNOWN_KEYS = st.text(min_size=1, max_size=30).filter(lambda key: key not in FIELDS)
KINDS = st.sampled_from(["valid", "spoiled", "extra", "missing", "junk", "huge"])
NOT_NONE_JUNK = junk.filter(lambda value: value is not None)
SPOILERS = st.one_of(
    junk,
    st.sampled_from(ACTIONS),
    huge,
    st.just([{"question_id": "q-7", "text": "unknown question"}]),
)


def interrupt_ids(request: HumanRequest) -> st.SearchStrategy[Any]:
    """This request's id, the same pause on other threads, the unbound form, and junk."""
    pause = request.interrupt_id.partition(".")[0]
    return st.one_of(
        st.just(request.interrupt_id),
        st.sampled_from([bound_id(pause, other) for other in OTHER_THREADS]),
        st.just(pause),  # the unbound form: names no thread
        st.sampled_from(["approve-research-s2", "review-decision-s9.fuzz-approve"]),
        st.text(max_size=30),
        junk,
    )


@st.composite
def valid_decisions(draw: st.DrawFn, request: HumanRequest) -> dict[str, Any]:
    action = draw(st.sampled_from(request.allowed_actions))
    decision: dict[str, Any] = {"interrupt_id": request.interrupt_id, "action": action}
    if action in ("reject", "abort") or draw(st.booleans()):
        decision["reason"] = draw(REASONS)
    if action in ("approve", "revise"):
        questions = [question.id for question in request.open_questions]
        if questions and draw(st.booleans()):
            decision["answers"] = [
                {"question_id": question, "text": draw(TEXTS)} for question in questions
            ]
        decision["constraints"] = draw(CONSTRAINTS)
    if draw(st.booleans()):
        decision["decided_by"] = draw(DECIDERS)
    return decision


def payloads(request: HumanRequest) -> st.SearchStrategy[Any]:
    """A resume value: valid, a valid one with one field spoiled or added, or junk."""
    ids = interrupt_ids(request)
    valid = valid_decisions(request)

    @st.composite
    def one(draw: st.DrawFn) -> Any:
        kind = draw(KINDS)
        if kind == "junk":
            return draw(NOT_NONE_JUNK)
        if kind == "huge":
            return draw(huge)
        decision = draw(valid)
        if kind == "spoiled":
            field = draw(st.sampled_from(FIELDS))
            decision[field] = draw(ids if field == "interrupt_id" else SPOILERS)
        elif kind == "extra":
            decision[draw(UNKNOWN_KEYS)] = draw(SPOILERS)
        elif kind == "missing":
            del decision[draw(st.sampled_from(["interrupt_id", "action"]))]
        return decision

    return one()


def is_resume_map(value: Any) -> bool:
    """LangGraph reads a dict whose keys all look like its interrupt ids as a resume *map*."""
    return isinstance(value, dict) and all(
        isinstance(key, str) and len(key) == 32 and set(key) <= XXH3_HEX for key in value
    )


def accepted_by_contract(request: HumanRequest, value: Any) -> HumanDecision | None:
    try:
        return as_decision(
            decision_schema(request, PAUSES[request.request_kind]).model_validate(value)
        )
    except ValidationError:
        return None


def assert_one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, message


# ---------------------------------------------------------------------------------------
# (a) Through the graph.


def resume_through_the_graph(waiting: Waiting, value: Any) -> str:
    """Resume the waiting thread with ``value``; check it was refused unchanged, or valid.

    Refused resumes follow each other on the same waiting checkpoint, as a client retrying
    would send them; only after an accepted one is the thread put back where it waited.
    """
    before = waiting.head()
    if before != waiting.waiting:
        waiting.restore()
        before = waiting.head()
        assert before == waiting.waiting
    expected = accepted_by_contract(waiting.request, value)
    workflow = waiting.workflow
    try:
        workflow.graph.invoke(
            Command(resume=value),
            waiting.config,
            context=workflow.context,
            durability="sync",
            interrupt_after=[waiting.node],
        )
    except ValidationError as error:
        assert is_invalid_resume(error), error
        assert expected is None, f"a valid decision was refused: {error}"
        assert_one_line(describe_validation_error(error))
        assert waiting.head() == before, "a refused resume changed the thread"
        return "refused"
    if is_resume_map(value):  # names no pending interrupt: LangGraph resumes nothing
        assert waiting.head() == before
        return "resumed nothing"
    assert expected is not None, f"the graph accepted an invalid decision: {value!r:.300}"
    after = waiting.head()
    assert after[0] != before[0] and after[1] == [], "an accepted decision moves the thread on"
    log = workflow.graph.get_state(waiting.config).values["decisions"]
    recorded = DecisionLog.model_validate(log).decisions[-1]
    assert (recorded.interrupt_id, recorded.action) == (expected.interrupt_id, expected.action)
    assert recorded.interrupt_id == waiting.request.interrupt_id
    return "accepted"


FUZZ = settings(
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)


def graph_fuzz(threads: dict[str, Waiting], node: str, count: int) -> None:
    waiting = threads[node]

    seen: Counter[str] = Counter()

    @settings(FUZZ, max_examples=count)
    @given(value=payloads(waiting.request))
    def check(value: Any) -> None:
        seen[resume_through_the_graph(waiting, value)] += 1

    check()
    assert seen["refused"] and seen["accepted"], seen  # both sides of the property were met


@pytest.mark.parametrize("node", ["approve_research", "review_decision"])
def test_generated_resumes_sent_to_the_graph_are_refused_unchanged_or_valid(
    threads: dict[str, Waiting], node: str
) -> None:
    graph_fuzz(threads, node, GRAPH_EXAMPLES_QUICK)


@pytest.mark.slow
@pytest.mark.parametrize("node", ["approve_research", "review_decision"])
def test_thousands_of_generated_resumes_sent_to_the_graph_are_refused_unchanged_or_valid(
    threads: dict[str, Waiting], node: str
) -> None:
    graph_fuzz(threads, node, GRAPH_EXAMPLES)


# ---------------------------------------------------------------------------------------
# (b) Through the CLI's parser: decision files and flags.


def as_json_bytes(value: Any, ascii_only: bool) -> bytes:
    try:
        text = json.dumps(value, ensure_ascii=ascii_only, default=repr)
    except RecursionError:  # json cannot write what ``deep`` builds: write it by hand
        text = "[" * 5_000 + "1" + "]" * 5_000
    return text.encode("utf-8", "replace")


def decision_files(request: HumanRequest) -> st.SearchStrategy[bytes]:
    """Decision files: JSON of generated payloads, spoiled bytes, binary, text, deep nesting."""
    values = payloads(request)

    @st.composite
    def one(draw: st.DrawFn) -> bytes:
        return file_bytes(draw, values)

    return one()


def file_bytes(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> bytes:
    kind = draw(st.sampled_from(["json", "json", "spoiled", "binary", "deep", "text"]))
    if kind == "binary":
        return draw(st.binary(max_size=200))
    if kind == "deep":
        depth = draw(st.integers(min_value=9, max_value=100_000))
        opener = draw(st.sampled_from(["[", '{"a":']))
        closer = "]" if opener == "[" else "}"
        return (opener * depth + "1" + closer * depth).encode()
    if kind == "text":
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    data = as_json_bytes(draw(values), draw(st.booleans()))
    if kind == "spoiled":
        at = draw(st.integers(min_value=0, max_value=len(data)))
        bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"}", b"\\"]))
        data = data[:at] + bad + data[at:]
    return data


ACTION_FLAGS = ("approve", "reject", "accept_partial", "grant_round", "abort")
EXTRAS: list[dict[str, Any]] = [
    {},
    {},
    {"reason": "not good enough"},
    {"reason": "   "},
    {"answers": ("q-2=an answer",)},
    {"answers": ("q-9=unknown question",)},
    {"answers": ("no equals sign",)},
    {"answers": ("q-2=",)},
    {"constraints": ("at most 120 words",)},
    {"constraints": ("  ",)},
    {"constraints": ("x",) * 25},
    {"answers": ("q-2=yes",), "constraints": ("section: Origins",), "reason": "why"},
]


@st.composite
def flag_sets(draw: st.DrawFn) -> dict[str, Any]:
    """No action, one, or two at once, with extras that fit, do not fit, or are malformed."""
    actions = draw(
        st.sampled_from(
            [(), (), ("approve",), ("reject",), ("abort",)]
            + [(name,) for name in ACTION_FLAGS]
            + [("approve", "reject"), ("grant_round", "abort")]
        )
    )
    flags: dict[str, Any] = {"reason": None, "answers": (), "constraints": ()}
    flags.update({name: name in actions for name in ACTION_FLAGS})
    flags.update(draw(st.sampled_from(EXTRAS)))
    return flags


FLAGS = flag_sets()


@st.composite
def cli_inputs(
    draw: st.DrawFn, files: st.SearchStrategy[bytes]
) -> tuple[dict[str, Any], bytes | None]:
    flags = draw(FLAGS)
    with_file = draw(st.booleans())
    if with_file and draw(st.booleans()):  # a file alone is how files are normally given
        flags = {"reason": None, "answers": (), "constraints": ()}
    return flags, draw(files) if with_file else None


def parse_through_the_cli(
    request: HumanRequest, path: Path, flags: dict[str, Any], content: bytes | None
) -> str:
    if content is not None:
        path.write_bytes(content)
    options = DecisionFlags(**flags, decision_file=path if content is not None else None)
    try:
        decision = parse_decision(request, options)
    except HandoffError as error:
        assert error.exit_code == ExitCode.USAGE, error
        assert_one_line(error.message)
        return "refused"
    if decision is None:
        assert content is None and not options.given()
        return "no decision"
    assert decision_schema(request, PAUSES[request.request_kind]).model_validate(
        decision.model_dump(mode="json")
    )
    assert decision.interrupt_id == request.interrupt_id
    return "accepted"


def parser_fuzz(threads: dict[str, Waiting], folder: Path, count: int) -> None:
    requests = [waiting.request for waiting in threads.values()]
    path = folder / "decision.json"
    strategies = [(request, cli_inputs(decision_files(request))) for request in requests]

    @settings(FUZZ, max_examples=count)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        request, inputs = data.draw(st.sampled_from(strategies))
        flags, content = data.draw(inputs)
        seen[parse_through_the_cli(request, path, flags, content)] += 1

    seen: Counter[str] = Counter()
    check()
    assert seen["refused"] and seen["accepted"], seen


def test_generated_decision_files_and_flags_are_refused_in_one_line_or_valid(
    threads: dict[str, Waiting], tmp_path: Path
) -> None:
    parser_fuzz(threads, tmp_path, PARSER_EXAMPLES_QUICK)


@pytest.mark.slow
def test_thousands_of_generated_decision_files_and_flags_are_refused_in_one_line_or_valid(
    threads: dict[str, Waiting], tmp_path: Path
) -> None:
    parser_fuzz(threads, tmp_path, PARSER_EXAMPLES)


# ---------------------------------------------------------------------------------------
# A handful of real `handoff resume` processes on the waiting thread.


def write(folder: Path, name: str, content: bytes) -> Path:
    path = folder / name
    path.write_bytes(content)
    return path


@pytest.mark.e2e
def test_handoff_resume_refuses_bad_decision_files_with_exit_2_and_one_line(
    threads: dict[str, Waiting], tmp_path: Path
) -> None:
    waiting = threads["approve_research"]
    waiting.restore()
    before = waiting.head()
    request = waiting.request
    other = {"interrupt_id": bound_id("approve-research-s2", "fuzz-other"), "action": "approve"}
    cases: list[tuple[list[str], str]] = [
        (["--decision-file", str(tmp_path / "absent.json")], "no such file"),
        (["--decision-file", str(tmp_path)], "is a directory"),
        (["--decision-file", str(write(tmp_path, "latin1.json", b'{"a": "\xe9"}'))], "not UTF-8"),
        (["--decision-file", str(write(tmp_path, "deep.json", b"[" * 100_000))], "nested deeper"),
        (
            ["--decision-file", str(write(tmp_path, "other.json", json.dumps(other).encode()))],
            "is a decision for thread 'fuzz-other'",
        ),
        (["--approve", "--reject", "--reason", "no"], "choose one action, not --approve and"),
        (["--decision-file", str(tmp_path / "x.json"), "--approve"], "cannot be combined"),
    ]
    env = backend_env(waiting.workflow.settings)
    for args, expected in cases:
        result = forked.run(["resume", waiting.thread_id, *args], env=env)
        assert result.returncode == ExitCode.USAGE, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (args, result.stderr)
        assert "Traceback" not in result.stderr
        assert waiting.head() == before, f"{args} changed the thread"
    assert waiting.workflow.pending(waiting.thread_id) == request
