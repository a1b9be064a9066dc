"""A handoff is a promise about specific revisions: changed inputs are never consumed silently."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from app.settings import BUNDLED_CORPUS
from app.text.primitives import CITATION
from app.workflow import Workflow
from contracts import ErrorCode, ResearchBundle, TaskState
from graphs.errors import IntegrityError
from tests.app.store_faults import delete, restore, tamper
from tests.app.test_handoff_routes import stop_before
from tests.conftest import OBJECTIVE

POLICIES = ["reevaluate", "fail", "ask"]
EDITED = "the-rosetta-stone.md"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A private copy of the bundled corpus that tests may edit."""
    target = tmp_path / "corpus"
    shutil.copytree(BUNDLED_CORPUS, target)
    return target


def waiting(workflow: Workflow, corpus: Path, policy: str, thread_id: str) -> ResearchBundle:
    """A thread paused for approval after research, with the given staleness policy."""
    task = workflow.task(
        OBJECTIVE,
        corpus=[str(corpus)],
        policies={"require_approval": True, "on_stale": policy},
    )
    outcome = workflow.run(task, thread_id)
    assert outcome.state == TaskState.INPUT_REQUIRED
    bundle = workflow.state(thread_id)["research"]
    assert isinstance(bundle, ResearchBundle)
    return bundle


def answer(workflow: Workflow, thread_id: str, action: str, **extra: Any) -> Any:
    request = workflow.pending(thread_id)
    assert request is not None
    return workflow.resume(
        thread_id, {"interrupt_id": request.interrupt_id, "action": action, **extra}
    )


def source_of(bundle: ResearchBundle, name: str) -> Any:
    return next(source for source in bundle.sources if source.uri.endswith(name))


def waiting_source(workflow: Workflow, corpus: Path, policy: str, thread_id: str) -> Any:
    """The edited source of a thread waiting for approval: its snapshot is what tests damage."""
    return source_of(waiting(workflow, corpus, policy, thread_id), EDITED)


def research_runs(workflow: Workflow, thread_id: str) -> int:
    return sum(
        1 for run in workflow.history(thread_id) if run.node_id == "research" and not run.reused
    )


def edit_source(corpus: Path, bundle: ResearchBundle) -> tuple[str, str]:
    """Rewrite the first cited sentence of one source; returns (old, new) sentences."""
    source = source_of(bundle, EDITED)
    fact = next(fact for fact in bundle.facts if fact.source_id == source.id)
    new = "French soldiers uncovered the Rosetta Stone in a fort wall during rebuilding work."
    path = corpus / EDITED
    path.write_text(path.read_text(encoding="utf-8").replace(fact.quote, new), encoding="utf-8")
    return fact.quote, new


def approved_after_an_edit(
    workflow: Workflow, corpus: Path, policy: str, thread_id: str
) -> tuple[ResearchBundle, Any]:
    """A thread whose source is edited while it waits for approval, then approved.

    Returns the bundle it waited with and what the approval led to.
    """
    bundle = waiting(workflow, corpus, policy, thread_id)
    edit_source(corpus, bundle)
    return bundle, answer(workflow, thread_id, "approve")


@pytest.mark.parametrize("policy", POLICIES)
def test_nothing_changed_proceeds_with_no_extra_work(
    workflow: Workflow, corpus: Path, policy: str
) -> None:
    waiting(workflow, corpus, policy, "t-same")
    outcome = answer(workflow, "t-same", "approve")
    assert outcome.result_status == "completed"
    assert research_runs(workflow, "t-same") == 1
    writer = next(run for run in workflow.history("t-same") if run.node_id == "writer")
    assert writer.checked_inputs[0].endswith("inputs checked: fresh")


def test_edited_source_under_reevaluate_re_researches_and_old_facts_are_gone(
    workflow: Workflow, corpus: Path
) -> None:
    before = waiting(workflow, corpus, "reevaluate", "t-edit")
    old, _ = edit_source(corpus, before)
    edited = source_of(before, EDITED).id
    outcome = answer(workflow, "t-edit", "approve")
    assert outcome.state == TaskState.INPUT_REQUIRED, "new research is approved again"
    after = workflow.state("t-edit")["research"]
    assert research_runs(workflow, "t-edit") == 2
    assert all(fact.quote != old for fact in after.facts)
    unchanged = {f.id: f.quote for f in before.facts if f.source_id != edited}
    again = {f.id: f.quote for f in after.facts if f.source_id != edited}
    assert {k: v for k, v in again.items() if k in unchanged} == {
        k: v for k, v in unchanged.items() if k in again
    }, "facts from unchanged sources keep their ids"
    assert set(unchanged) & set(again)
    outcome = answer(workflow, "t-edit", "approve")
    assert outcome.result_status == "completed"
    article = workflow.artifact("t-edit", "article").decode()
    assert old not in article
    assert all(after.fact(claim_id) for claim_id in CITATION.findall(article))
    writer = [run for run in workflow.history("t-edit") if run.node_id == "writer"]
    assert any("stale" in line for line in writer[0].checked_inputs)


def test_edited_source_under_fail_ends_stale_input_naming_the_source(
    workflow: Workflow, corpus: Path
) -> None:
    bundle, outcome = approved_after_an_edit(workflow, corpus, "fail", "t-fail")
    assert (outcome.state, outcome.result_status) == (TaskState.REJECTED, "failed")
    [error] = outcome.errors
    assert error.code == ErrorCode.STALE_INPUT
    assert f"source {source_of(bundle, EDITED).id} is stale" in error.detail
    assert workflow.status("t-fail").freshness is not None
    assert not any(
        run.node_id == "writer" and run.usage.tool_calls for run in workflow.history("t-fail")
    )


def test_edited_source_under_ask_interrupts_listing_the_change(
    workflow: Workflow, corpus: Path
) -> None:
    bundle, outcome = approved_after_an_edit(workflow, corpus, "ask", "t-ask")
    request = outcome.human_request
    assert outcome.state == TaskState.INPUT_REQUIRED and request is not None
    assert request.request_kind == "stale_input"
    assert any(f"source {source_of(bundle, EDITED).id}: stale" in c for c in request.changes)
    assert request.allowed_actions == ["accept_new_revision", "rerun_producer", "abort"]
    outcome = answer(workflow, "t-ask", "rerun_producer")
    assert (
        outcome.human_request is not None
        and outcome.human_request.request_kind == "approve_research"
    )
    assert answer(workflow, "t-ask", "approve").result_status == "completed"
    assert research_runs(workflow, "t-ask") == 2


def test_accepting_a_changed_source_re_pins_it_and_continues(
    workflow: Workflow, corpus: Path
) -> None:
    approved_after_an_edit(workflow, corpus, "ask", "t-accept")
    outcome = answer(workflow, "t-accept", "accept_new_revision")
    assert outcome.result_status == "completed"
    assert research_runs(workflow, "t-accept") == 1
    decisions = [d.text for d in workflow.state("t-accept")["handoff"].accepted_decisions]
    assert any(text.startswith("accept_new_revision") for text in decisions)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_tampered_snapshot_is_refused_under_every_policy(
    own_store_workflow: Workflow, corpus: Path, policy: str
) -> None:
    workflow = own_store_workflow  # the test damages its stored bytes
    source = waiting_source(workflow, corpus, policy, "t-tamper")
    original = workflow.context.store.get(source.snapshot)
    tamper(workflow.context.store, source.snapshot)
    with pytest.raises(IntegrityError, match=f"snapshot of {source.id} is tampered"):
        answer(workflow, "t-tamper", "approve")
    assert not any(run.node_id == "reviewer" for run in workflow.history("t-tamper"))
    status = workflow.status("t-tamper")
    assert status.outcome is None and status.next_nodes == ("writer",), "nothing was consumed"
    with pytest.raises(IntegrityError):
        workflow.resume("t-tamper")
    restore(workflow.context.store, source.snapshot, original)
    outcome = workflow.resume("t-tamper")
    assert outcome.result_status == "completed", "restored bytes: the thread goes on"


@pytest.mark.parametrize("policy", POLICIES)
def test_a_deleted_snapshot_is_missing_and_handled_by_policy(
    own_store_workflow: Workflow, corpus: Path, policy: str
) -> None:
    workflow = own_store_workflow  # the test damages its stored bytes
    source = waiting_source(workflow, corpus, policy, "t-gone")
    delete(workflow.context.store, source.snapshot)
    outcome = answer(workflow, "t-gone", "approve")
    if policy == "fail":
        assert outcome.errors[0].code == ErrorCode.STALE_INPUT
        assert f"snapshot of {source.id}" in outcome.missing_inputs
    elif policy == "ask":
        request = outcome.human_request
        assert request is not None and request.request_kind == "stale_input"
        assert "accept_new_revision" not in request.allowed_actions
        outcome = answer(workflow, "t-gone", "rerun_producer")
        outcome = answer(workflow, "t-gone", "approve")
        assert outcome.result_status == "completed"
    else:
        assert outcome.human_request is not None, "research re-ran and asks for approval again"
        assert answer(workflow, "t-gone", "approve").result_status == "completed"
        assert workflow.context.store.get(source.snapshot), "re-research restored the snapshot"


def human_revision(workflow: Workflow, thread_id: str) -> bytes:
    """The draft with the last paragraph of its text removed: still fully cited and listed."""
    body = workflow.artifact(thread_id, "draft").decode()
    text, sources = body.split("\n## Sources\n")
    paragraphs = text.rstrip("\n").split("\n\n")
    return ("\n\n".join(paragraphs[:-2]) + "\n\n## Sources\n" + sources).encode()


def test_a_draft_revised_by_a_person_is_reviewed_under_reevaluate(
    workflow: Workflow, corpus: Path
) -> None:
    stop_before(workflow, "t-revised", "reviewer", corpus, "reevaluate")
    handed = workflow.state("t-revised")["draft"].body.revision
    revised = human_revision(workflow, "t-revised")
    ref = workflow.put_artifact("t-revised", "draft", revised)
    assert ref.revision == handed + 1, "the person's edit is the draft's next revision"
    outcome = workflow.resume("t-revised")
    assert outcome.result_status == "completed"
    assert workflow.artifact("t-revised", "article") == revised
    assert any(run.node_id == "edit:draft by human" for run in workflow.history("t-revised"))
    assert [run.node_id for run in workflow.history("t-revised")].count("writer") == 1


def test_a_draft_revised_by_a_person_under_fail_ends_stale_input(
    workflow: Workflow, corpus: Path
) -> None:
    stop_before(workflow, "t-revised-fail", "reviewer", corpus, "fail")
    workflow.put_artifact("t-revised-fail", "draft", human_revision(workflow, "t-revised-fail"))
    outcome = workflow.resume("t-revised-fail")
    assert outcome.errors[0].code == ErrorCode.STALE_INPUT
    assert "draft revision 1 is stale" in outcome.errors[0].detail


def test_a_draft_revised_by_a_person_under_ask_can_be_accepted(
    workflow: Workflow, corpus: Path
) -> None:
    stop_before(workflow, "t-revised-ask", "reviewer", corpus, "ask")
    revised = human_revision(workflow, "t-revised-ask")
    workflow.put_artifact("t-revised-ask", "draft", revised)
    outcome = workflow.resume("t-revised-ask")
    assert outcome.human_request is not None
    assert outcome.human_request.request_kind == "stale_input"
    outcome = answer(workflow, "t-revised-ask", "accept_new_revision")
    assert outcome.result_status == "completed"
    assert workflow.artifact("t-revised-ask", "article") == revised
