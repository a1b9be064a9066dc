"""The alternative a user would otherwise write: the same agents as bare LangGraph nodes.

Plain dict state, no node boundary (no re-validation of inputs or outputs, no input hash,
no budget check, no retries), no handoff envelope, no run ledger, no filesystem artifact
store: artifacts live in a dict in memory. The agents themselves are the project's
offline agents, called exactly as the real nodes call them, so both sides do the same
research, writing and reviewing.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from typing_extensions import TypedDict

from contracts import (
    ArtifactKind,
    ArtifactRef,
    DraftArticle,
    Handoff,
    RefStatus,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    research_questions,
)
from graphs import (
    ResearchAgent,
    ResearchRequest,
    ReviewerAgent,
    ReviewRequest,
    StepInfo,
    WriterAgent,
    WriteRequest,
)
from graphs.nodes.join_research import merge_bundles

NO_HANDOFF = cast(Handoff, None)
"""The bare nodes pass no envelope; the offline Writer and Reviewer do not read it."""


@dataclass
class MemoryStore:
    """Artifacts in a dict: no files, no revision files, no verification on read.

    It still computes each blob's sha256 because the agents put it into their contracts
    and the Reviewer compares a source's snapshot digest with the digest research read.
    """

    blobs: dict[str, list[tuple[ArtifactRef, bytes]]] = field(default_factory=dict)

    def put(
        self, artifact_id: str, kind: ArtifactKind, content: bytes, media_type: str
    ) -> ArtifactRef:
        """Keep the bytes; identical content to the head returns the head."""
        history = self.blobs.setdefault(artifact_id, [])
        digest = hashlib.sha256(content).hexdigest()
        if history and history[-1][0].sha256 == digest:
            return history[-1][0]
        ref = ArtifactRef(
            artifact_id=artifact_id,
            kind=kind,
            uri=f"artifact://{kind}/{artifact_id}",
            media_type=media_type,
            sha256=digest,
            revision=len(history) + 1,
            size_bytes=len(content),
        )
        history.append((ref, content))
        return ref

    def batch(self) -> AbstractContextManager[object]:
        """No block to end: each put is in the dict when it returns."""
        return nullcontext()

    def get(self, ref: ArtifactRef) -> bytes:
        """The bytes of that revision (unverified)."""
        return self.blobs[ref.artifact_id][ref.revision - 1][1]

    def head(self, artifact_id: str) -> ArtifactRef | None:
        """The latest revision."""
        history = self.blobs.get(artifact_id)
        return history[-1][0] if history else None

    def history(self, artifact_id: str) -> list[ArtifactRef]:
        """Every revision, oldest first."""
        return [ref for ref, _ in self.blobs.get(artifact_id, [])]

    def verify(self, ref: ArtifactRef) -> RefStatus:
        """Same classification as the real stores, from memory."""
        history = self.blobs.get(ref.artifact_id, [])
        if ref.revision > len(history):
            return "missing"
        if hashlib.sha256(history[ref.revision - 1][1]).hexdigest() != ref.sha256:
            return "tampered"
        return "stale" if ref.revision < len(history) else "fresh"


class BareState(TypedDict, total=False):
    """Plain state: whatever the nodes return, unchecked."""

    task: TaskSpec
    question_id: str
    found: Annotated[list[tuple[str, ResearchBundle]], operator.add]
    research: ResearchBundle
    notes: str
    draft: DraftArticle
    review: ReviewResult
    article: str


@dataclass(frozen=True)
class BareAgents:
    """The three agents the bare graph calls (the same objects the workflow uses)."""

    research: ResearchAgent
    writer: WriterAgent
    reviewer: ReviewerAgent


class _Given(TypedDict):
    """What the Writer and the Reviewer are both given: the task, no envelope, the merged
    facts, the store and their step (each request adds its own draft and review)."""

    task: TaskSpec
    handoff: Handoff
    bundle: ResearchBundle
    store: MemoryStore
    step: StepInfo


def _step(config: RunnableConfig, node: str, task: TaskSpec) -> StepInfo:
    thread_id = str((config.get("configurable") or {}).get("thread_id"))
    step = (config.get("metadata") or {}).get("langgraph_step")
    return StepInfo(
        thread_id=thread_id,
        node=node,
        step=step if isinstance(step, int) else -1,
        task_version=task.task_version,
    )


def build_bare_graph(
    agents: BareAgents, store: MemoryStore, *, notes_in_state: bool = False
) -> StateGraph[BareState, None, BareState, BareState]:
    """research (one ``Send`` per question) → join → writer → reviewer ⟲ → finalize.

    The same shape as the workflow: research fans out one task per research question and
    a join merges their bundles (with the workflow's own ``merge_bundles``), on plain state.

    ``notes_in_state`` also copies the research notes text into state, as a user who
    keeps everything in the graph state would (the naive side of P2).
    """

    def fan_out(state: BareState) -> list[Send]:
        task = state["task"]
        return [
            Send("research", {"task": task, "question_id": question.id})
            for question in research_questions(task)
        ]

    def research(state: BareState, config: RunnableConfig) -> dict[str, Any]:
        task, question = state["task"], state["question_id"]
        step = replace(_step(config, "research", task), branch=question)
        output = agents.research.run(ResearchRequest(task, store, step, question_id=question))
        return {"found": [(question, output.result)]}

    def join(state: BareState, config: RunnableConfig) -> dict[str, Any]:
        task = state["task"]
        order = [question.id for question in research_questions(task)]
        found = sorted(state["found"], key=lambda pair: order.index(pair[0]))
        bundles = [bundle for _, bundle in found]
        bundle = merge_bundles(task, bundles, store, _step(config, "join", task))
        update: dict[str, Any] = {"research": bundle}
        if notes_in_state and bundle.artifact_refs:
            update["notes"] = store.get(bundle.artifact_refs[0]).decode()
        return update

    def given(state: BareState, config: RunnableConfig, node: str) -> _Given:
        task = state["task"]
        return _Given(
            task=task,
            handoff=NO_HANDOFF,
            bundle=state["research"],
            store=store,
            step=_step(config, node, task),
        )

    def writer(state: BareState, config: RunnableConfig) -> dict[str, Any]:
        request = WriteRequest(
            **given(state, config, "writer"),
            previous=state.get("draft"),
            review=state.get("review"),
        )
        return {"draft": agents.writer.run(request).result}

    def reviewer(state: BareState, config: RunnableConfig) -> dict[str, Any]:
        request = ReviewRequest(**given(state, config, "reviewer"), draft=state["draft"])
        return {"review": agents.reviewer.run(request).result}

    def finalize(state: BareState) -> dict[str, Any]:
        return {"article": store.get(state["draft"].body).decode()}

    def after_research(state: BareState) -> Literal["writer", "__end__"]:
        bundle = state["research"]
        return "writer" if bundle.facts and bundle.result_status != "failed" else "__end__"

    def after_review(state: BareState) -> Literal["writer", "finalize", "__end__"]:
        review = state["review"]
        if review.verdict == "approved":
            return "finalize"
        rounds = state["task"].budget.max_review_rounds
        if review.verdict == "changes_requested" and state["draft"].revision < rounds:
            return "writer"
        return "__end__"

    builder: StateGraph[BareState, None, BareState, BareState] = StateGraph(BareState)
    nodes: dict[str, Callable[..., dict[str, Any]]] = {
        "research": research,
        "join": join,
        "writer": writer,
        "reviewer": reviewer,
        "finalize": finalize,
    }
    for name, node in nodes.items():
        builder.add_node(name, node)
    builder.add_conditional_edges(START, fan_out, ["research"])
    builder.add_edge("research", "join")
    builder.add_conditional_edges("join", after_research, ["writer", END])
    builder.add_edge("writer", "reviewer")
    builder.add_conditional_edges("reviewer", after_review, ["writer", "finalize", END])
    builder.add_edge("finalize", END)
    return builder
