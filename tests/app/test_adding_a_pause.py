"""A pause added as docs/adapt.md says (one node module and its place in the
wiring) is asked, hinted and answered through the project's own checks; each step left
out fails at import or at build_graph, naming what is missing."""

from __future__ import annotations

import dataclasses
import io
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest
from langgraph.errors import is_invalid_resume
from langgraph.types import Command
from pydantic import ValidationError
from rich.console import Console

from app.cli.decision_file import DecisionInputError
from app.cli.decision_hints import action_names, render_request
from app.cli.decision_prompt import prompt_decision
from app.cli.decisions import DecisionFlags, parse_decision
from app.errors import InvalidDecision
from app.settings import Settings
from app.workflow import Workflow, check_decision
from contracts import DecisionLog, HumanRequest, TaskState
from graphs import WIRING, build_graph, node
from graphs.decision_schema import decision_schema
from graphs.errors import WiringError
from graphs.human import pause_request
from graphs.pauses import PauseDeclarationError
from graphs.ports import StepInfo
from graphs.routing import STOP, stopped
from graphs.wiring import pauses_of
from tests.conftest import OBJECTIVE, nodes_run, passes
from tests.docs.snippets import ROOT
from tests.extension_edit_titles import (
    load,
    page_source,
    route_after_edit_titles,
    wiring_with,
)
from tests.placing import beside_the_reviewer
from tests.routes import check_handoffs_follow_the_route

TITLE = OBJECTIVE  # the writer heads the article with the objective
RENAMED = "Reading the Rosetta Stone"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> types.ModuleType:
    """The page's node module, imported once for this file."""
    return load(tmp_path_factory.mktemp("pause"), "edit_titles_page")


def waiting(settings: Settings, page: types.ModuleType, thread: str) -> HumanRequest:
    with Workflow(settings, wiring=wiring_with(page)) as workflow:
        outcome = workflow.run(OBJECTIVE, thread)
        assert outcome.state == TaskState.INPUT_REQUIRED, outcome
        assert outcome.human_request is not None
        return outcome.human_request


def edits(*pairs: tuple[str, str]) -> str:
    import json

    return "titles=" + json.dumps([{"old": old, "new": new} for old, new in pairs])


def test_the_new_pause_shows_its_own_request_and_the_cli_names_its_action(
    settings: Settings, page: types.ModuleType
) -> None:
    request = waiting(settings, page, "t-titles")
    assert (request.request_kind, request.allowed_actions) == (
        "edit_titles",
        ["approve", "edit_titles"],
    )
    assert request.details is not None and request.details["titles"][0] == TITLE
    with Workflow(settings, wiring=wiring_with(page)) as workflow:
        assert set(workflow.pauses) == {*pauses_of(WIRING), "edit_titles"}
        shown = io.StringIO()
        render_request(request, "t-titles", Console(file=shown, width=400), workflow.pauses)
        text = shown.getvalue()
        assert "resume t-titles --approve\n" in text
        assert "resume t-titles --action edit_titles --detail titles=JSON\n" in text
        assert f'titles: ["{TITLE}"' in text, "the pause's own request is shown"
        flags = DecisionFlags(action="edit_titles", details=(edits((TITLE, RENAMED)),))
        assert flags.raw(action_names(workflow.pauses)) is not None, "--action takes its name"
    without = {kind: pause for kind, pause in pauses_of(WIRING).items() if kind != "edit_titles"}
    with pytest.raises(DecisionInputError, match="--action 'edit_titles' is no action"):
        DecisionFlags(action="edit_titles").raw(action_names(without))  # no pause declares it


def test_the_terminal_prompt_asks_for_the_pause_s_own_fields(
    settings: Settings, page: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = waiting(settings, page, "t-prompt")
    typed = edits((TITLE, RENAMED)).partition("=")[2]
    monkeypatch.setattr("sys.stdin", io.StringIO(f"edit_titles\n{typed}\n"))
    shown = io.StringIO()
    with Workflow(settings, wiring=wiring_with(page)) as workflow:
        given = prompt_decision(request, "t-prompt", Console(file=shown), workflow.pauses)
        assert given is not None and given["details"] == {
            "titles": [{"old": TITLE, "new": RENAMED}]
        }
        assert check_decision(request, given, workflow.pauses).action == "edit_titles"
    assert "titles (The headings to rename.), as JSON or text" in shown.getvalue()


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (
            {"action": "edit_titles", "details": ('titles=[{"old": "x"}]',)},
            "details.titles.0.new: Field required",
        ),
        ({"action": "edit_titles", "details": ("titles=[]",)}, "details.titles: List should"),
        ({"action": "edit_titles", "details": ("colour=red",)}, "details.colour: Extra inputs"),
        ({"action": "edit_titles"}, "details is required when action is 'edit_titles'"),
        (
            {"approve": True, "details": (edits(("a", "b")),)},
            "details goes with action 'edit_titles', not 'approve'",
        ),
        ({"grant_round": True}, "'grant_round' is not allowed here; expected one of approve, edit"),
        ({"constraints": ("at most 90 words",)}, "'revise' is not allowed here"),
    ],
)
def test_a_decision_that_does_not_fit_the_pause_is_refused_naming_the_field(
    settings: Settings, page: types.ModuleType, flags: dict[str, Any], problem: str
) -> None:
    request = waiting(settings, page, "t-refused")
    with Workflow(settings, wiring=wiring_with(page)) as workflow:
        with pytest.raises(InvalidDecision) as refused:
            parse_decision(request, DecisionFlags(**flags), workflow.pauses)
        assert problem in refused.value.message
        assert refused.value.message.startswith(f"invalid decision for {request.interrupt_id!r}")
        assert workflow.pending("t-refused") == request, "the thread still waits, unchanged"


def test_the_graph_refuses_a_wrong_resume_and_publishes_the_pause_s_decision_schema(
    settings: Settings, page: types.ModuleType
) -> None:
    request = waiting(settings, page, "t-graph")
    schema = decision_schema(request, page.EDIT_TITLES).model_json_schema()
    assert "TitleEdits" in schema["$defs"], "the resume payload's schema types the details"
    with Workflow(settings, wiring=wiring_with(page)) as workflow:
        wrong = {"interrupt_id": request.interrupt_id, "action": "edit_titles", "details": {}}
        with pytest.raises(ValidationError) as caught:
            workflow.graph.invoke(
                Command(resume=wrong), workflow.config("t-graph"), context=workflow.context
            )
        assert is_invalid_resume(caught.value) and "titles" in str(caught.value)
        assert workflow.pending("t-graph") == request


def test_a_valid_decision_resumes_the_thread_and_renames_the_heading(
    settings: Settings, page: types.ModuleType
) -> None:
    request = waiting(settings, page, "t-renamed")
    with Workflow(settings, wiring=wiring_with(page)) as workflow:
        flags = DecisionFlags(action="edit_titles", details=(edits((TITLE, RENAMED)),))
        decision = parse_decision(request, flags, workflow.pauses)
        outcome = workflow.resume("t-renamed", decision)
        assert outcome.state == TaskState.COMPLETED and outcome.result_status == "completed"
        assert outcome.article is not None
        article = workflow.context.store.get(outcome.article).decode("utf-8")
        assert article.splitlines()[0] == f"# {RENAMED}"
        path = ("research", "join_research", "writer", "edit_titles", "reviewer", "finalize")
        assert passes(nodes_run(workflow, "t-renamed"), *path) == [*path]
        values = workflow.graph.get_state(workflow.config("t-renamed")).values
        last = DecisionLog.model_validate(values["decisions"]).last()
        assert last is not None and (last.request_kind, last.action) == (
            "edit_titles",
            "edit_titles",
        )
        assert last.details == {"titles": [{"old": TITLE, "new": RENAMED}]}
        check_handoffs_follow_the_route(workflow)  # the pause hands the reviewer its draft


# -- each step left out ------------------------------------------------------------------


def variant(tmp_path: Path, name: str, old: str, new: str) -> Any:
    """The page's module with one line changed, imported (or failing to import)."""
    source = page_source()
    assert old in source, f"the page no longer has {old!r}"
    return load(tmp_path, name, source.replace(old, new))


ACTIONS_LINE = 'actions=(Action("approve"), Action("edit_titles", needs=("details",))),'


def test_a_pause_without_actions_fails_at_import(tmp_path: Path) -> None:
    with pytest.raises(PauseDeclarationError, match="'edit_titles' declares no actions"):
        variant(tmp_path, "no_actions", ACTIONS_LINE, "actions=(),")
    with pytest.raises(PauseDeclarationError, match="a tuple of one needs a trailing comma"):
        variant(tmp_path, "one_action", ACTIONS_LINE, 'actions=(Action("approve")),')


def test_a_pause_node_declared_without_its_pause_fails_at_import(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="pauses= takes the node's Pause"):
        variant(tmp_path, "bare_flag", "pauses=EDIT_TITLES)", "pauses=True)")


def test_details_without_a_decision_contract_fail_at_import(tmp_path: Path) -> None:
    with pytest.raises(PauseDeclarationError, match="declares no decision contract"):
        variant(tmp_path, "no_contract", "    decision=TitleEdits,\n", "")


def test_an_action_the_literal_and_the_actions_do_not_both_name_fails_at_import(
    tmp_path: Path,
) -> None:
    """The body's ``== "approve"`` type-checks against the Literal: it must be an action."""
    with pytest.raises(
        PauseDeclarationError,
        match=r"'edit_titles': its Literal names approve, edit_titles but its actions are "
        r"edit_titles; both must name the same actions",
    ):
        variant(
            tmp_path,
            "no_approve",
            ACTIONS_LINE,
            'actions=(Action("edit_titles", needs=("details",)),),',
        )


@pytest.mark.slow
def test_a_branch_on_a_misspelt_action_is_a_mypy_error_as_the_page_says(tmp_path: Path) -> None:
    """The page's body with ``== "aprove"``: mypy's strict equality names both spellings.

    Slow: a cold mypy run over what the module imports (the project's own cache is left to
    ``make check``).
    """
    from mypy import api

    source = page_source()
    assert source.count('== "approve"') == 1, "the page no longer branches on approve"
    module = tmp_path / "misspelt_titles.py"
    module.write_text(source.replace('== "approve"', '== "aprove"'), encoding="utf-8")
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nmypy_path = {ROOT}\nignore_missing_imports = True\n")
    report, errors, status = api.run(
        [
            str(module),
            "--strict",
            "--follow-imports=silent",
            f"--config-file={config}",
            f"--cache-dir={tmp_path / 'cache'}",
        ]
    )
    assert status == 1, report + errors
    [line] = [line for line in report.splitlines() if "error:" in line]
    assert line.endswith(
        "Non-overlapping equality check (left operand type: \"Literal['approve', "
        "'edit_titles']\", right operand type: \"Literal['aprove']\")  [comparison-overlap]"
    ), line


def test_a_request_offering_an_undeclared_action_is_refused(page: types.ModuleType) -> None:
    step = StepInfo(thread_id="t", node="edit_titles", step=3, task_version=1)
    with pytest.raises(PauseDeclarationError, match="has no action 'publish'"):
        pause_request(
            page.EDIT_TITLES,
            step,
            question="?",
            allowed=["publish"],
            details=page.Titles(titles=[]),
        )


def test_the_pause_left_out_of_the_wiring_or_unreached_fails_the_build(
    page: types.ModuleType,
) -> None:
    wiring = wiring_with(page)
    routed_but_missing = tuple(pair for pair in wiring if pair[0] is not page.edit_titles)
    with pytest.raises(WiringError, match=r"names no node: \['edit_titles'\]"):
        build_graph(wiring=routed_but_missing)
    stray = dataclasses.replace(page.edit_titles, name="stray_titles")  # no route names it
    with pytest.raises(WiringError, match=r"reaches \['stray_titles'\]"):
        build_graph(wiring=(*wiring, (stray, "reviewer")))


def test_two_nodes_may_pause_the_same_way_and_each_is_asked_in_turn(
    settings: Settings, page: types.ModuleType
) -> None:
    again = node(
        "edit_titles_again",
        reads=page.EditTitlesInput,
        writes=page.EditTitlesOutput,
        pauses=page.EDIT_TITLES,
    )(page.edit_titles.body)

    def to_again(state: Mapping[str, Any]) -> Literal["edit_titles_again", "__end__"]:
        return STOP if stopped(state) else "edit_titles_again"

    wiring = tuple(
        (spec, to_again if spec is page.edit_titles else route) for spec, route in wiring_with(page)
    )
    wiring = (*wiring, *beside_the_reviewer(WIRING, ((again, route_after_edit_titles),)))
    with Workflow(settings, wiring=wiring) as workflow:
        first = workflow.run(OBJECTIVE, "t-twice")
        assert first.human_request is not None
        approve = DecisionFlags(action="approve")
        outcome = workflow.resume(
            "t-twice", parse_decision(first.human_request, approve, workflow.pauses)
        )
        second = outcome.human_request
        assert second is not None and second.request_kind == "edit_titles"
        assert second.interrupt_id != first.human_request.interrupt_id
        flags = DecisionFlags(action="edit_titles", details=(edits((TITLE, RENAMED)),))
        outcome = workflow.resume("t-twice", parse_decision(second, flags, workflow.pauses))
        assert outcome.state == TaskState.COMPLETED and outcome.article is not None
        article = workflow.context.store.get(outcome.article).decode("utf-8")
        assert article.splitlines()[0] == f"# {RENAMED}"
        ran = nodes_run(workflow, "t-twice")
        assert ran.index("edit_titles") < ran.index("edit_titles_again") < ran.index("reviewer")


def test_two_different_pauses_of_one_kind_fail_the_build(page: types.ModuleType) -> None:
    other = dataclasses.replace(page.EDIT_TITLES, ids="edit-titles-other")
    again = node(
        "edit_titles_again",
        reads=page.EditTitlesInput,
        writes=page.EditTitlesOutput,
        pauses=other,
    )(page.edit_titles.body)

    def to_again(state: Mapping[str, Any]) -> Literal["edit_titles_again", "__end__"]:
        return "edit_titles_again"

    wiring = tuple(
        (spec, to_again if spec is page.edit_titles else route) for spec, route in wiring_with(page)
    )
    with pytest.raises(WiringError, match="two different pauses of kind 'edit_titles'"):
        build_graph(wiring=(*wiring, (again, route_after_edit_titles)))
