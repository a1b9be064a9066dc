"""What each agent is given and gives back: the requests, the output, the protocols.

A request's fields filled from state name their channel once (``from_channel``); the
node builds the request from them (``NodeCall.request``) and the build refuses a channel
the node does not declare. The app supplies an implementation of each protocol per node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from contracts import (
    DraftArticle,
    Handoff,
    ResearchBundle,
    ReviewResult,
    TaskSpec,
    ToolReceipt,
    Usage,
    VersionedContract,
)
from graphs.ports import ArtifactStore, StepInfo
from graphs.tools.toolbox import Toolbox

T = TypeVar("T")


@dataclass
class AgentOutput(Generic[T]):
    """An agent's contract result plus what it cost and which tools it called."""

    result: T
    usage: Usage = field(default_factory=Usage)
    receipts: list[ToolReceipt] = field(default_factory=list)


CHANNEL = "channel"
"""Metadata key of a request field filled from a state channel (``from_channel``)."""


def from_channel(name: str) -> dict[str, str]:
    """Metadata of a request field the node fills from the state channel ``name``.

    Used as ``field(metadata=from_channel("research"))``. The channel is named once, here:
    ``NodeCall.request`` builds the request from it, ``build_graph`` refuses a request
    whose channel its node does not declare, and a model prompt renders every such field
    it does not lay out itself (``app.agents.prompt_inputs.request_inputs``).
    """
    return {CHANNEL: name}


CONTRIBUTED = "inputs"
"""The request field carrying channels other nodes declared their agent reads (``read_by``)."""


TOOLS = "tools"
"""The request field carrying the node's tools to its agent (``NodeCall.delegate`` fills it)."""


def contributed_inputs() -> Any:
    """The ``inputs`` field of a request: what other nodes added for this agent to read.

    Keyed by channel; filled by ``NodeCall.request`` from the reads ``build_graph`` added
    to the node, and rendered by model prompts like any other input they do not lay out.
    """
    return field(default_factory=dict)


def request_channels(request: type[Any]) -> dict[str, str]:
    """A request type's fields filled from state, with the channel of each."""
    return {
        item.name: item.metadata[CHANNEL] for item in fields(request) if CHANNEL in item.metadata
    }


@dataclass(frozen=True)
class ResearchRequest:
    """Everything research is given for one step.

    ``step.widen`` asks for wider retrieval after a first pass found too little;
    ``step.tool_calls_left`` is the budget it must stop at, reporting partial results.
    ``question_id`` is the one question this step researches (each research branch has
    one, ``q-1`` being the objective); None researches them all. It is handed no envelope:
    what research does depends on its view of the task and the corpus alone, so a
    revision that leaves those alone reuses it.
    """

    task: TaskSpec = field(metadata=from_channel("task"))
    store: ArtifactStore = field()
    step: StepInfo = field()
    inputs: Mapping[str, VersionedContract | None] = contributed_inputs()
    question_id: str | None = None
    tools: Toolbox | None = None
    """The node's tools behind the boundary (the corpus read); None outside a node, where
    the agent stands up the same boundary itself and reports its calls."""


@dataclass(frozen=True)
class WriteRequest:
    """Everything the writer is given for one round: facts, last draft, last review."""

    task: TaskSpec = field(metadata=from_channel("task"))
    handoff: Handoff = field(metadata=from_channel("handoff"))
    bundle: ResearchBundle = field(metadata=from_channel("research"))
    previous: DraftArticle | None = field(metadata=from_channel("draft"))
    review: ReviewResult | None = field(metadata=from_channel("review"))
    store: ArtifactStore = field()
    step: StepInfo = field()
    inputs: Mapping[str, VersionedContract | None] = contributed_inputs()
    tools: Toolbox | None = None
    """The node's tools behind the boundary, if its declaration (or the wiring) gives it
    some; a model-backed writer offers them to its model."""


@dataclass(frozen=True)
class ReviewRequest:
    """Everything the reviewer is given: the draft and the facts it must trace to sources."""

    task: TaskSpec = field(metadata=from_channel("task"))
    handoff: Handoff = field(metadata=from_channel("handoff"))
    bundle: ResearchBundle = field(metadata=from_channel("research"))
    draft: DraftArticle = field(metadata=from_channel("draft"))
    store: ArtifactStore = field()
    step: StepInfo = field()
    inputs: Mapping[str, VersionedContract | None] = contributed_inputs()
    tools: Toolbox | None = None
    """The node's tools behind the boundary, if its declaration (or the wiring) gives it
    some; a model-backed reviewer offers them to its model."""


@runtime_checkable
class ResearchAgent(Protocol):
    """Reads sources and returns sourced facts."""

    def fingerprint(self, task: TaskSpec) -> str:
        """A hash of everything research would read, so changed sources mean new work."""
        ...

    def run(self, request: ResearchRequest) -> AgentOutput[ResearchBundle]:
        """One bounded research step."""
        ...


@runtime_checkable
class WriterAgent(Protocol):
    """Writes an article from facts only."""

    def run(self, request: WriteRequest) -> AgentOutput[DraftArticle]:
        """One bounded writing round."""
        ...


@runtime_checkable
class ReviewerAgent(Protocol):
    """Checks a draft against the facts and their sources."""

    def run(self, request: ReviewRequest) -> AgentOutput[ReviewResult]:
        """One bounded review."""
        ...
