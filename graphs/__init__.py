"""The workflow graph: state, nodes, pure routers and build_graph(). Imports contracts."""

from graphs.context import RunContext
from graphs.graph import build_graph
from graphs.ports import (
    AgentOutput,
    ArtifactStore,
    ResearchAgent,
    ReviewerAgent,
    RunLedger,
    StepInfo,
    WriterAgent,
)
from graphs.state import WorkflowInput, WorkflowOutput, WorkflowState

__all__ = [
    "AgentOutput",
    "ArtifactStore",
    "ResearchAgent",
    "ReviewerAgent",
    "RunContext",
    "RunLedger",
    "StepInfo",
    "WorkflowInput",
    "WorkflowOutput",
    "WorkflowState",
    "WriterAgent",
    "build_graph",
]
