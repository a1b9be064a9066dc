"""A thread's task revised mid-thread: only the work the change invalidates is redone.

Both backends (the ``workflow`` fixture). The race with a resume and the kill during the
re-run have their own modules (``test_revise_race.py``, ``test_revise_crash.py``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from typing_extensions import TypedDict

from app.agents.apparatus import without_apparatus
from app.errors import InvalidRevision, ThreadFinished, ThreadNotFound
from app.settings import Settings
from app.text.primitives import CITATION
from app.workflow import Workflow
from app.workflow.progress import step_summary
from contracts import NodeRun, RunOutcome, TaskRevision, TaskSpec, TaskState
from graphs import WIRING
from graphs import node as declare_node
from graphs.declare import CheckedState, NodeCall
from graphs.errors import ContractViolation, SourceRefused
from graphs.node_runner import SEALED, record_event
from graphs.ports import StepInfo
from graphs.research_holds import record_reused
from tests.conftest import OBJECTIVE, nodes_run, passes
from tests.graphs.test_declare import WordTally
from tests.placing import with_extension
from tests.routes import check_handoffs_follow_the_route

QUESTION = "What does the stone contain?"
SECTIONS = ["The Stone", "Decipherment"]


def completed(workflow: Workflow, thread: str, **fields: Any) -> RunOutcome:
    fields.setdefault("questions", [QUESTION])
    outcome = workflow.run(workflow.task(OBJECTIVE, **fields), thread)
    assert outcome.result_status == "completed", outcome.errors
    return outcome


def runs_at(workflow: Workflow, thread: str, version: int, node: str) -> list[NodeRun]:
    return [
        run
        for run in workflow.history(thread)
        if run.task_version == version and run.node_id == node and run.status == "succeeded"
    ]


def thin_corpus(settings: Any) -> Any:
    """A corpus (under the test's corpus root) that says nothing of the objective."""
    bees = settings.data_dir.parent / "bees"
    bees.mkdir()
    (bees / "honey.md").write_text("# Bees\n\nBees make honey from the nectar of flowers.\n")
    return bees


def worked(runs: list[NodeRun]) -> list[NodeRun]:
    return [run for run in runs if not run.reused]


def test_a_tighter_word_limit_reuses_research_and_reruns_writer_and_reviewer(
    workflow: Workflow,
) -> None:
    first = completed(workflow, "t-rev-words", constraints={"max_words": 400})
    lines: list[str] = []
    revised = workflow.revise(
        "t-rev-words",
        {"max_words": 120, "reason": "a shorter piece"},
        on_progress=lambda node, values: lines.append(": ".join(step_summary(node, values))),
    )
    assert revised.state == TaskState.COMPLETED and revised.result_status == "completed"
    task: TaskSpec = workflow.state("t-rev-words")["task"]
    assert (task.task_version, task.constraints.max_words) == (2, 120)
    research = runs_at(workflow, "t-rev-words", 2, "research")
    assert len(research) == 2 and worked(research) == [], "every research branch is reused"
    assert all(run.note == "reused (task v1)" for run in research)
    for node in ("writer", "reviewer"):
        [rerun] = worked(runs_at(workflow, "t-rev-words", 2, node))
        assert rerun.note is not None and rerun.note.startswith("re-run for task v2: ")
        assert "task" in rerun.note
    assert workflow.state("t-rev-words")["draft"].word_count <= 120
    assert first.article is not None and revised.article is not None
    assert revised.article.revision == first.article.revision + 1
    published = f"{TaskState.COMPLETED.value} · article revision {revised.article.revision}"
    assert any(line.endswith(published) for line in lines), lines  # progress names it
    old = workflow.context.store.get(first.article)  # the published revision stays readable
    assert old != workflow.context.store.get(revised.article)
    check_handoffs_follow_the_route(workflow)


def test_kept_research_is_audited_once_when_revise_task_runs_again(workflow: Workflow) -> None:
    completed(workflow, "t-rev-again", constraints={"max_words": 400})
    workflow.revise("t-rev-again", {"max_words": 120, "reason": "a shorter piece"})
    audited = runs_at(workflow, "t-rev-again", 2, "research")
    assert len(audited) == 2
    # revise_task's body again, as after a process killed inside it once it had audited
    # the kept branches but before its own attempt was recorded
    values = workflow.graph.get_state(workflow.config("t-rev-again")).values
    task: TaskSpec = workflow.state("t-rev-again")["task"]
    nodes = {spec.name: spec for spec, _ in workflow.wiring}
    step = StepInfo(thread_id="t-rev-again", node="revise_task", step=9, task_version=2)
    call = NodeCall(nodes["revise_task"], CheckedState(values), task, workflow.context, step, nodes)
    held = [(nodes["research"], run.input_hash, {"task": run.input_hash}) for run in audited]
    record_reused(call, task, held)
    assert runs_at(workflow, "t-rev-again", 2, "research") == audited


def test_a_thread_that_ended_sealed_is_never_revised_in_place(workflow: Workflow) -> None:
    ended = completed(workflow, "t-rev-sealed")
    record_event(
        workflow.ledger,
        "t-rev-sealed",
        task_version=1,
        label=f"{SEALED}an A2A task",
        detail="sealed",
        clock=workflow.context.clock,
    )
    shorter = TaskRevision(max_words=120, reason="a shorter piece")
    with pytest.raises(ThreadFinished, match=r"ended sealed \(an A2A task\)"):
        workflow.revise("t-rev-sealed", shorter)
    # a served client's revision reaches the node, which leaves the thread as it was
    workflow.graph.invoke(
        {"revision": shorter}, workflow.config("t-rev-sealed"), context=workflow.context
    )
    assert workflow.outcome("t-rev-sealed") == ended
    assert workflow.state("t-rev-sealed")["task"].task_version == 1
    [refused] = [run for run in workflow.history("t-rev-sealed") if run.node_id == "revise_task"]
    assert refused.note == "revision refused: the thread ended sealed (an A2A task)"


def test_an_added_sub_question_is_the_only_branch_researched(workflow: Workflow) -> None:
    completed(workflow, "t-rev-ask")
    added = "Who deciphered the hieroglyphs?"
    revision = TaskRevision(add_questions=[added], reason="the editor wants the decipherer")
    outcome = workflow.revise("t-rev-ask", revision)
    assert outcome.state == TaskState.COMPLETED
    research = runs_at(workflow, "t-rev-ask", 2, "research")
    assert len(research) == 3
    [new] = worked(research)
    assert new.note == "new for task v2"
    bundle = workflow.state("t-rev-ask")["research"]
    answered = {question for fact in bundle.facts for question in fact.answers}
    open_ids = {question.id for question in bundle.open_questions}
    assert "q-3" in answered | open_ids, "the new question is researched and accounted for"
    assert any(fact.question_id == "q-2" for fact in bundle.facts), "q-2's facts are kept"
    check_handoffs_follow_the_route(workflow)


def test_a_dropped_section_reruns_writer_and_reviewer_and_is_gone(workflow: Workflow) -> None:
    completed(workflow, "t-rev-drop", constraints={"required_sections": SECTIONS})
    assert "## The Stone" in workflow.artifact("t-rev-drop", "article").decode()
    outcome = workflow.revise(
        "t-rev-drop", {"drop_sections": ["The Stone"], "reason": "covered elsewhere"}
    )
    assert outcome.result_status == "completed"
    article = workflow.artifact("t-rev-drop", "article").decode()
    assert "## The Stone" not in article and "## Decipherment" in article
    for node in ("writer", "reviewer"):
        assert worked(runs_at(workflow, "t-rev-drop", 2, node)), node
    notes = sorted(str(run.note) for run in runs_at(workflow, "t-rev-drop", 2, "research"))
    assert notes == ["re-run for task v2: task changed since v1", "reused (task v1)"], (
        "the objective's branch ranks the sections; the sub-question's is reused"
    )


def test_a_revision_is_an_accepted_decision_the_envelope_carries(workflow: Workflow) -> None:
    completed(workflow, "t-rev-log")
    workflow.revise(
        "t-rev-log", {"max_words": 150, "reason": "fits the page", "decided_by": "editor"}
    )
    state = workflow.state("t-rev-log")
    [decision] = state["decisions"].decisions
    assert (decision.action, decision.decided_by, decision.reason) == (
        "revise",
        "editor",
        "fits the page",
    )
    assert decision.details is not None and decision.details["task_version"] == 2
    assert "decided_at" in decision.details
    handoff = state["handoff"]
    assert handoff.task_version == 2, "the envelope states the version it serves"
    assert "revise by editor: fits the page" in [item.text for item in handoff.accepted_decisions]


def test_a_waiting_thread_is_revised_and_asks_again_for_the_new_version(
    workflow: Workflow,
) -> None:
    task = workflow.task(OBJECTIVE, questions=[QUESTION], policies={"require_approval": True})
    paused = workflow.run(task, "t-rev-wait")
    assert paused.state == TaskState.INPUT_REQUIRED
    again = workflow.revise("t-rev-wait", {"max_words": 150, "reason": "shorter"})
    assert again.state == TaskState.INPUT_REQUIRED and again.human_request is not None
    assert workflow.state("t-rev-wait")["task"].task_version == 2
    assert worked(runs_at(workflow, "t-rev-wait", 2, "research")) == []


@pytest.mark.parametrize(
    ("revision", "field"),
    [
        pytest.param({"drop_questions": ["Who?"], "reason": "x"}, "drop_questions[0]", id="drop"),
        pytest.param({"add_questions": [QUESTION], "reason": "x"}, "add_questions[0]", id="again"),
        pytest.param({"drop_sections": ["Nope"], "reason": "x"}, "drop_sections[0]", id="section"),
        pytest.param({"reason": "x"}, "must change something", id="nothing"),
        pytest.param({"max_words": 5, "reason": "x"}, "max_words", id="bounds"),
        pytest.param({"max_words": 300}, "reason", id="no-reason"),
    ],
)
def test_a_revision_that_cannot_apply_is_refused_naming_the_field_and_changes_nothing(
    workflow: Workflow, revision: dict[str, Any], field: str
) -> None:
    completed(workflow, "t-rev-bad", constraints={"max_words": 300})
    before = (workflow.history("t-rev-bad"), workflow.state("t-rev-bad")["task"])
    with pytest.raises(InvalidRevision, match=field.replace("[", r"\[").replace("]", r"\]")):
        workflow.revise("t-rev-bad", revision)
    history, task = workflow.history("t-rev-bad"), workflow.state("t-rev-bad")["task"]
    assert (history[: len(before[0])], task) == before
    for refusal in history[len(before[0]) :]:  # one that cannot apply is audited as refused
        assert_audited_refusal(refusal, field)
    contract_broken = "[" not in field
    assert len(history) - len(before[0]) == (0 if contract_broken else 1)


def assert_audited_refusal(run: Any, named: str) -> None:
    """A refused revision in the audit: a failed, never reused refused_input attempt."""
    assert (run.node_id, run.status, run.reused) == ("revise_task", "failed", False)
    assert run.error is not None and run.error.kind == "refused_input"
    assert run.note is not None and run.note.startswith("revision refused: ")
    assert named in run.error.detail


def test_a_revision_to_a_corpus_outside_the_roots_is_refused_before_anything_is_written(
    workflow: Workflow,
) -> None:
    completed(workflow, "t-rev-etc")
    config = workflow.config("t-rev-etc")
    before = (workflow.history("t-rev-etc"), len(list(workflow.graph.get_state_history(config))))
    with pytest.raises(SourceRefused, match="corpus path /etc is outside the corpus roots"):
        workflow.revise("t-rev-etc", {"corpus": ["/etc"], "reason": "elsewhere"})
    history = workflow.history("t-rev-etc")
    after = (history[:-1], len(list(workflow.graph.get_state_history(config))))
    assert after == before, "no checkpoint written, the audit only gained the refusal"
    assert_audited_refusal(history[-1], "corpus path /etc")


def test_an_unknown_or_cancelled_thread_is_not_revised(workflow: Workflow) -> None:
    change = {"max_words": 150, "reason": "shorter"}
    with pytest.raises(ThreadNotFound):
        workflow.revise("t-rev-none", change)
    task = workflow.task(OBJECTIVE, policies={"require_approval": True})
    workflow.run(task, "t-rev-cancel")
    workflow.cancel("t-rev-cancel", "not needed")
    with pytest.raises(ThreadFinished, match="cancelled"):
        workflow.revise("t-rev-cancel", change)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        pytest.param({"drop_questions": ["Not asked"]}, "drop_questions[0]", id="cannot-apply"),
        pytest.param({"corpus": ["/etc"]}, "corpus path /etc is outside", id="outside-roots"),
        pytest.param({"corpus": ["/no-such-corpus"]}, "corpus path /no-such-corpus", id="missing"),
    ],
)
def test_a_revision_the_graph_is_invoked_with_that_cannot_apply_leaves_the_thread_as_it_was(
    workflow: Workflow, change: dict[str, Any], named: str
) -> None:
    """A caller of the graph itself sends the revision as input, which no door checked.

    ``revise_task`` is the last guard (``Workflow.revise`` and the server's door refuse it
    before a run exists).

    Refused, twice: the state is the one the thread ended with (the revision gone with its
    run), and each refusal is in the audit as one, never reused as the node's work.
    """
    completed(workflow, "t-rev-served")
    config = workflow.config("t-rev-served")
    before = workflow.graph.get_state(config)
    for _ in range(2):
        workflow.graph.invoke(
            {"revision": {**change, "reason": "x"}}, config, context=workflow.context
        )
        after = workflow.graph.get_state(config)
        assert (after.values, after.next) == (before.values, before.next)
    refused = [run for run in workflow.history("t-rev-served") if run.node_id == "revise_task"]
    assert [(run.status, run.reused, run.task_version) for run in refused] == [
        ("failed", False, 1)
    ] * 2
    for run in refused:
        assert run.error is not None and run.error.kind == "refused_input"
        assert run.note is not None and run.note.startswith("revision refused: ")
        assert named in run.note and named in run.error.detail
    served = {"max_words": 150, "reason": "shorter"}
    workflow.graph.invoke({"revision": served}, config, context=workflow.context)
    assert workflow.outcome("t-rev-served").result_status == "completed"
    assert workflow.state("t-rev-served")["task"].task_version == 2
    check_handoffs_follow_the_route(workflow)


def test_an_envelope_of_an_older_task_version_is_never_consumed(workflow: Workflow) -> None:
    completed(workflow, "t-rev-stale", constraints={"max_words": 300})
    config = workflow.config("t-rev-stale")
    old = workflow.state("t-rev-stale")["handoff"]
    path = nodes_run(workflow, "t-rev-stale")
    before_writer = path[path.index("writer") - 1]  # the node whose route hands the Writer on
    workflow.revise("t-rev-stale", {"max_words": 150, "reason": "shorter"})
    stale = old.model_copy(update={"next_allowed_action": "writer"})
    workflow.graph.update_state(config, {"handoff": stale, "outcome": None}, as_node=before_writer)
    with pytest.raises(ContractViolation, match=r"envelope for task v1 .* task is v2"):
        workflow.graph.invoke(None, config, context=workflow.context)


def test_an_answer_follows_its_question_when_a_revision_renumbers_it(workflow: Workflow) -> None:
    found, lunch = "Who found the Rosetta Stone in 1799?", "What did Champollion eat for lunch?"
    task = workflow.task(OBJECTIVE, questions=[found, lunch], policies={"require_approval": True})
    request = workflow.run(task, "t-rev-answer").human_request
    assert request is not None and [q.id for q in request.open_questions] == ["q-3"]
    answer = "No record of his lunch survives"
    decision = {
        "interrupt_id": request.interrupt_id,
        "action": "revise",
        "answers": [{"question_id": "q-3", "text": answer}],
    }
    assert workflow.resume("t-rev-answer", decision).result_status == "completed"
    revised = workflow.revise("t-rev-answer", {"drop_questions": [found], "reason": "known"})
    assert revised.state == TaskState.INPUT_REQUIRED and revised.human_request is not None
    [moved] = revised.human_request.open_questions
    assert (moved.id, moved.text, moved.answer) == ("q-2", lunch, answer)
    log = workflow.state("t-rev-answer")["decisions"]
    assert log.decisions[-1].details["question_ids"] == {"q-2": "", "q-3": "q-2"}


def test_dropping_an_unanswerable_question_lets_a_waiting_thread_complete(
    workflow: Workflow,
) -> None:
    lunch = "What did Champollion eat for lunch?"
    asked = workflow.run(workflow.task(OBJECTIVE, questions=[lunch]), "t-rev-lunch")
    assert asked.state == TaskState.INPUT_REQUIRED, "the open question is put to a person"
    done = workflow.revise("t-rev-lunch", {"drop_questions": [lunch], "reason": "unanswerable"})
    assert done.result_status == "completed", done.errors
    bundle = workflow.state("t-rev-lunch")["research"]
    assert bundle.open_questions == [] and {fact.question_id for fact in bundle.facts} <= {
        "q-1",
        None,
    }, "the dropped question's research is not kept"
    [objective] = runs_at(workflow, "t-rev-lunch", 2, "research")
    assert objective.note == "reused (task v1)"


def test_a_thread_that_found_too_little_completes_on_the_corpus_a_revision_names(
    workflow: Workflow, settings: Any
) -> None:
    bees = thin_corpus(settings)
    thin = workflow.run(workflow.task(OBJECTIVE, corpus=[str(bees)]), "t-rev-corpus")
    assert thin.result_status != "completed" and thin.article is None
    done = workflow.revise("t-rev-corpus", {"corpus": [], "reason": "the bundled corpus"})
    assert done.result_status == "completed" and done.article is not None
    assert workflow.state("t-rev-corpus")["task"].corpus == []
    assert all(not run.reused for run in runs_at(workflow, "t-rev-corpus", 2, "research"))


def test_a_question_asked_again_gets_its_own_research_back_not_the_last_versions(
    workflow: Workflow,
) -> None:
    other = "Who deciphered the hieroglyphs?"
    completed(workflow, "t-rev-flip")
    workflow.revise(
        "t-rev-flip", {"drop_questions": [QUESTION], "add_questions": [other], "reason": "b"}
    )
    workflow.revise(
        "t-rev-flip", {"drop_questions": [other], "add_questions": [QUESTION], "reason": "a"}
    )
    [revised] = [
        run
        for run in workflow.history("t-rev-flip")
        if run.task_version == 2 and run.node_id == "revise_task"
    ]
    assert revised.note is not None and "research holds" not in revised.note
    completed(workflow, "t-rev-fresh")
    facts = [
        (fact.question_id, fact.quote) for fact in workflow.state("t-rev-flip")["research"].facts
    ]
    fresh = [
        (fact.question_id, fact.quote) for fact in workflow.state("t-rev-fresh")["research"].facts
    ]
    assert facts == fresh, "v3 asks what v1 asked: v1's research, replayed, not v2's"


def test_a_thread_that_found_too_little_ends_again_without_research_on_a_word_limit(
    workflow: Workflow, settings: Any
) -> None:
    bees = thin_corpus(settings)
    thin = workflow.run(workflow.task(OBJECTIVE, corpus=[str(bees)]), "t-rev-thin")
    again = workflow.revise("t-rev-thin", {"max_words": 120, "reason": "shorter"})
    assert (again.state, again.result_status) == (thin.state, thin.result_status)
    revised = [run for run in workflow.history("t-rev-thin") if run.task_version == 2]
    ran = [run.node_id for run in revised]
    assert "research" in ran and all(run.reused for run in revised if run.node_id == "research")
    assert passes(ran, "writer", "conclude") == ["conclude"] and ran[-1] == "conclude", (
        "the revision keeps the research that found too little, and concludes again"
    )
    check_handoffs_follow_the_route(workflow)


def test_a_revision_to_a_tighter_limit_leaves_no_heading_without_content(
    workflow: Workflow,
) -> None:
    question = "What is the Rosetta Stone made of?"
    workflow.run(workflow.task(OBJECTIVE, questions=[question]), "t-tighter")
    first = without_apparatus(workflow.artifact("t-tighter", "article").decode())
    assert f"## {question}" in first, "the sub-question has its section"
    for limit in (150, 60, 40):
        outcome = workflow.revise("t-tighter", {"max_words": limit, "reason": "shorter"})
        assert outcome.result_status == "completed", outcome
        article = without_apparatus(workflow.artifact("t-tighter", "article").decode())
        sections = re.split(r"^## .+\n", article, flags=re.M)[1:]
        assert all(CITATION.search(text) for text in sections), f"{limit}: {article}"


class TallyReads(TypedDict):
    task: TaskSpec
    outcome: RunOutcome | None


class TallyWrites(TypedDict, total=False):
    tally: WordTally | None


@declare_node("tally_article", reads=TallyReads, writes=TallyWrites, read_by=("reviewer",))
def tally_article(state: TallyReads) -> TallyWrites:
    """A node a project added, whose channel no list in the template names."""
    return {"tally": WordTally(words=state["task"].task_version)}


def test_a_revision_clears_what_a_node_added_to_the_wiring_wrote_for_the_old_task(
    settings: Settings,
) -> None:
    wiring = with_extension(WIRING, (tally_article, "reviewer"), via="tally_article")
    with Workflow(settings, wiring=wiring) as workflow:
        completed(workflow, "t-rev-added")
        assert workflow.state("t-rev-added")["tally"] == WordTally(words=1)
        workflow.revise("t-rev-added", {"max_words": 120, "reason": "a shorter piece"})
        history = list(workflow.graph.get_state_history(workflow.config("t-rev-added")))
    revised = [
        snap for snap in history if "task" in snap.values and snap.values["task"].task_version == 2
    ]
    first = revised[-1]  # the checkpoint revise_task wrote: the new task, nothing derived
    assert first.values.get("tally") is None and first.values.get("draft") is None
    assert revised[0].values["tally"] == WordTally(words=2), "the new task's run tallied anew"
