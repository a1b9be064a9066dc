"""The workflow graph: declared nodes, pure routers and build_graph(). Imports contracts."""

from graphs.agents import (
    AgentOutput,
    ResearchAgent,
    ResearchRequest,
    ReviewerAgent,
    ReviewRequest,
    WriterAgent,
    WriteRequest,
)
from graphs.context import RunContext
from graphs.declare import NodeSpec, get_step_info, no_task, node, whole_task
from graphs.fan_out import one_task
from graphs.graph import WIRING, WorkflowOutput, build_graph, workflow_channels
from graphs.node_runner import NodeCall, NodeResult
from graphs.ports import ArtifactStore, RunLedger, StepInfo
from graphs.state import RunnerWrites, WorkflowInput
from graphs.wiring import Wiring

__all__ = [
    "WIRING",
    "AgentOutput",
    "ArtifactStore",
    "NodeCall",
    "NodeResult",
    "NodeSpec",
    "ResearchAgent",
    "ResearchRequest",
    "ReviewRequest",
    "ReviewerAgent",
    "RunContext",
    "RunLedger",
    "RunnerWrites",
    "StepInfo",
    "WorkflowInput",
    "WorkflowOutput",
    "WriteRequest",
    "Wiring",
    "WriterAgent",
    "build_graph",
    "get_step_info",
    "no_task",
    "node",
    "one_task",
    "whole_task",
    "workflow_channels",
]
