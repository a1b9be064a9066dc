"""Contracts: the only way work moves between agents. Imports nothing but pydantic."""

from contracts.a2a import TaskState
from contracts.artifacts import ArtifactKind, ArtifactRef
from contracts.audit import NodeError, NodeRun, NodeStatus, Usage
from contracts.base import Contract, VersionedContract
from contracts.branches import BranchResult, BranchResults, BranchTask
from contracts.decisions import DecisionLog, RecordedDecision
from contracts.draft import DraftArticle
from contracts.errors import ErrorCode, ErrorDetail, ErrorKind, ResultStatus
from contracts.freshness import FreshnessReport, RefCheck, RefStatus
from contracts.handoff import (
    AuthoritativeInput,
    ConstraintItem,
    Decision,
    Handoff,
    JoinedBranch,
    NextAction,
)
from contracts.human import (
    ActionName,
    Answer,
    FactSummary,
    HumanDecision,
    HumanRequest,
    PauseKind,
)
from contracts.outcome import ARTIFACT_PATH, RunOutcome
from contracts.provenance import Provenance
from contracts.registry import registered, serializable_types
from contracts.research import (
    CONFIDENCE_RULE,
    CodeExample,
    Fact,
    LineRange,
    Question,
    ResearchBundle,
    Source,
    Span,
    research_questions,
)
from contracts.review import RequiredChange, ReviewResult, Verdict
from contracts.revision import (
    MOVED_QUESTIONS,
    REVISE_ACTION,
    RevisionRefused,
    TaskRevision,
    moved_questions,
)
from contracts.task import Budget, Constraints, Policies, RunChoices, StalePolicy, TaskSpec
from contracts.tools import (
    ExportArticleInput,
    ExportArticleOutput,
    ReadSourceInput,
    ReadSourceOutput,
    SearchCorpusInput,
    SearchCorpusOutput,
    SearchHit,
    ToolError,
    ToolErrorCode,
    ToolReceipt,
    ToolText,
    WriteConfirmation,
)
from contracts.upgrades import upgrader

__all__ = [
    "MOVED_QUESTIONS",
    "REVISE_ACTION",
    "moved_questions",
    "ARTIFACT_PATH",
    "CONFIDENCE_RULE",
    "ActionName",
    "Answer",
    "ArtifactKind",
    "ArtifactRef",
    "AuthoritativeInput",
    "BranchResult",
    "BranchResults",
    "BranchTask",
    "Budget",
    "CodeExample",
    "ConstraintItem",
    "Constraints",
    "Contract",
    "Decision",
    "DecisionLog",
    "DraftArticle",
    "ErrorCode",
    "ErrorDetail",
    "ErrorKind",
    "Fact",
    "FreshnessReport",
    "FactSummary",
    "Handoff",
    "HumanDecision",
    "HumanRequest",
    "JoinedBranch",
    "NextAction",
    "NodeError",
    "NodeRun",
    "NodeStatus",
    "PauseKind",
    "Policies",
    "RunChoices",
    "Provenance",
    "Question",
    "RefCheck",
    "RecordedDecision",
    "RefStatus",
    "RequiredChange",
    "RevisionRefused",
    "ResearchBundle",
    "ResultStatus",
    "ReviewResult",
    "RunOutcome",
    "Source",
    "Span",
    "LineRange",
    "StalePolicy",
    "TaskRevision",
    "TaskSpec",
    "TaskState",
    "ExportArticleInput",
    "ExportArticleOutput",
    "ReadSourceInput",
    "ReadSourceOutput",
    "SearchCorpusInput",
    "SearchCorpusOutput",
    "SearchHit",
    "ToolError",
    "ToolErrorCode",
    "ToolReceipt",
    "ToolText",
    "WriteConfirmation",
    "Usage",
    "Verdict",
    "VersionedContract",
    "registered",
    "research_questions",
    "serializable_types",
    "upgrader",
]
