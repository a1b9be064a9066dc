"""A revision SIGKILLed mid-re-run is finished by a resume that redoes none of the reused work.

A thread runs to completion (the objective and one sub-question, at most 400 words), then
a spawned process revises it to at most 150 words with a ``kill`` fault rule, so the
process SIGKILLs itself inside the re-run: before the revision is applied, as the Writer
starts, after the Writer's attempt was recorded but before LangGraph saw it, or as the
Reviewer starts. A resume in the test's process must then finish the revision: a new
article within the new limit, research for version 2 only ever reused (a word limit is no
part of research's work), the Writer's version-2 work done once, and the first article
still readable at its revision.
"""

from __future__ import annotations

import multiprocessing
import signal
import time

import pytest

from app.errors import ThreadBusy
from app.settings import BUNDLED_CORPUS, Settings
from app.workflow import Workflow
from bench._common import QUESTIONS
from contracts import NodeRun, RunOutcome, TaskRevision, TaskSpec
from graphs.boundary import read
from graphs.markdown import word_count
from tests.app.test_concurrency import assert_linear_chain, assert_no_duplicate_revisions
from tests.conftest import OBJECTIVE

pytestmark = pytest.mark.e2e
THREAD = "t-revise-crash"
SPAWN = multiprocessing.get_context("spawn")
SHORTER = TaskRevision(
    max_words=150, reason="The editor wants a shorter piece.", decided_by="editor"
)
BUSY_RETRIES = 50
"""Resumes refused while a killed process's PostgreSQL session (and lock) is still ending."""


def _revise_until_killed(settings: Settings, thread_id: str) -> None:
    """The revising process: its settings carry the kill rule, so it never returns."""
    with Workflow(settings) as workflow:
        workflow.revise(thread_id, SHORTER)


def resume_once_released(workflow: Workflow, thread_id: str) -> RunOutcome:
    """Resume as soon as the killed process's lock is gone (at once on SQLite)."""
    for _ in range(BUSY_RETRIES):
        try:
            return workflow.resume(thread_id)
        except ThreadBusy:
            time.sleep(0.2)
    return workflow.resume(thread_id)


def current_task(workflow: Workflow) -> TaskSpec:
    values = workflow.graph.get_state(workflow.config(THREAD)).values
    task = read(values, "task", TaskSpec, node="test")
    assert task is not None
    return task


def attempts(runs: list[NodeRun], node: str, version: int) -> list[NodeRun]:
    return [run for run in runs if run.node_id == node and run.task_version == version]


def did_work(runs: list[NodeRun]) -> list[NodeRun]:
    """The attempts that succeeded by doing their work (not by reusing a recorded result)."""
    return [run for run in runs if run.status == "succeeded" and not run.reused]


@pytest.mark.parametrize(
    ("point", "version"),  # the task version saved when the kill came
    [
        ("revise_task:start", 1),
        ("writer:start", 2),
        ("writer:before_return", 2),
        ("reviewer:start", 2),
    ],
)
def test_a_revision_killed_mid_rerun_is_finished_by_resume_without_redoing_reused_work(
    settings: Settings, point: str, version: int
) -> None:
    with Workflow(settings) as workflow:
        task = workflow.task(
            OBJECTIVE,
            questions=[QUESTIONS[0]],
            constraints={"max_words": 400},
            corpus=[str(BUNDLED_CORPUS)],
        )
        first = workflow.run(task, THREAD)
        assert first.result_status == "completed" and first.article is not None
        old_article = workflow.artifact(THREAD, "article")
        assert word_count(old_article.decode()) > 150, "the revision must change the article"

    reviser = SPAWN.Process(
        target=_revise_until_killed,
        args=(settings.with_overrides(fault=f"kill:{point}"), THREAD),
    )
    reviser.start()
    reviser.join(120)
    assert reviser.exitcode == -signal.SIGKILL, f"the revision was not killed at {point}"

    with Workflow(settings) as workflow:
        assert current_task(workflow).task_version == version, "the saved task is not as killed"

        outcome = resume_once_released(workflow, THREAD)
        assert outcome.result_status == "completed", outcome
        assert current_task(workflow).constraints.max_words == 150

        assert outcome.article is not None and outcome.article.revision == 2
        new_article = workflow.artifact(THREAD, "article")
        assert new_article != old_article and word_count(new_article.decode()) <= 150
        store = workflow.context.store
        revisions = store.history(first.article.artifact_id)
        assert [ref.revision for ref in revisions] == [1, 2]
        assert revisions[0] == first.article and store.get(revisions[0]) == old_article

        runs = workflow.history(THREAD)
        research_v1 = attempts(runs, "research", 1)
        research_v2 = attempts(runs, "research", 2)
        assert len(did_work(research_v1)) == 2, "one branch per question: the objective and q-2"
        assert research_v2, "version 2 never reached research"
        assert all(run.reused and run.status == "succeeded" for run in research_v2), [
            (run.attempt, run.status, run.reused) for run in research_v2
        ]
        assert {run.input_hash for run in research_v2} == {run.input_hash for run in research_v1}
        assert len(research_v2) == len(research_v1), "each kept branch is audited once"

        writer_v2 = attempts(runs, "writer", 2)
        assert len(did_work(writer_v2)) == 1, "the Writer's version-2 work was done twice"
        if point == "writer:before_return":  # recorded before the kill: the resume reused it
            assert [run.reused for run in writer_v2 if run.status == "succeeded"] == [False, True]
        assert len(did_work(attempts(runs, "finalize", 2))) == 1
        assert not [run for run in runs if run.status == "running"]
        assert_linear_chain(workflow, THREAD)
        assert_no_duplicate_revisions(workflow, THREAD)
