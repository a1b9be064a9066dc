"""Every handoff names the node that ran next, on the paths a changed input opens.

The other workflow tests walk the common paths (each is checked after it ends, see
``tests/routes.py``); these drive the rarer ones: an input that changes after review and
before finalize, and a source that changes between writer and reviewer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.settings import BUNDLED_CORPUS
from app.workflow import Workflow
from contracts import DraftArticle, TaskState
from tests.app.store_faults import delete
from tests.conftest import OBJECTIVE
from tests.placing import hands_review_on
from tests.routes import check_handoffs_follow_the_route, graph_edges


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    target = tmp_path / "corpus"
    shutil.copytree(BUNDLED_CORPUS, target)
    return target


def stop_before(workflow: Workflow, thread_id: str, node: str, corpus: Path, policy: str) -> None:
    """Run a new thread up to (not into) ``node``, as a crash right before it would."""
    task = workflow.task(OBJECTIVE, corpus=[str(corpus)], policies={"on_stale": policy})
    workflow.graph.invoke(
        {"task": task},
        workflow.config(thread_id),
        context=workflow.context,
        durability="sync",
        interrupt_before=[node],
    )
    assert node in workflow.status(thread_id).next_nodes, "stopped before it (maybe beside others)"


def walked(workflow: Workflow, *edges: tuple[str, str]) -> None:
    seen = check_handoffs_follow_the_route(workflow)
    missing = set(edges) - seen
    assert not missing, f"not walked: {missing}"
    assert seen <= graph_edges()


def test_a_draft_revised_before_finalize_goes_back_to_review(
    workflow: Workflow, corpus: Path
) -> None:
    stop_before(workflow, "t-fin-review", "finalize", corpus, "reevaluate")
    workflow.put_artifact("t-fin-review", "draft", b"# Edited\n\nA person's own sentence.\n")
    outcome = workflow.resume("t-fin-review")
    assert outcome.state == TaskState.COMPLETED
    walked(workflow, ("finalize", "reviewer"))


def test_a_draft_gone_before_finalize_is_written_again(
    own_store_workflow: Workflow, corpus: Path
) -> None:
    workflow = own_store_workflow  # the test damages its stored bytes
    stop_before(workflow, "t-fin-write", "finalize", corpus, "reevaluate")
    draft = workflow.state("t-fin-write")["draft"]
    assert isinstance(draft, DraftArticle)
    delete(workflow.context.store, draft.body)
    workflow.resume("t-fin-write")
    walked(workflow, ("finalize", "writer"))


@pytest.mark.parametrize(
    ("action", "edge"), [("accept_new_revision", "reviewer"), ("abort", "__end__")]
)
def test_a_person_decides_about_a_draft_revised_before_finalize(
    workflow: Workflow, corpus: Path, action: str, edge: str
) -> None:
    stop_before(workflow, "t-fin-ask", "finalize", corpus, "ask")
    workflow.put_artifact("t-fin-ask", "draft", b"# Edited\n\nA person's own sentence.\n")
    waiting = workflow.resume("t-fin-ask")
    assert waiting.human_request is not None
    decision = {"interrupt_id": waiting.human_request.interrupt_id, "action": action}
    workflow.resume("t-fin-ask", {**decision, "reason": "checked"})
    walked(workflow, ("finalize", "stale_decision"), ("stale_decision", edge))


def test_a_source_edited_before_review_sends_the_run_back_to_research(
    workflow: Workflow, corpus: Path
) -> None:
    stop_before(workflow, "t-rev-research", "reviewer", corpus, "reevaluate")
    edited = corpus / "the-rosetta-stone.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nA new paragraph.\n", "utf-8")
    outcome = workflow.resume("t-rev-research")
    assert outcome.state == TaskState.COMPLETED
    walked(workflow, (hands_review_on(workflow.wiring), "research"))
