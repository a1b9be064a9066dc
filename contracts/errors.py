"""Stable error codes and the error contract every agent result can carry."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field

from contracts.base import Contract, Identifier

ResultStatus = Literal["completed", "partial", "failed"]
"""Business outcome of a step or run; separate from the A2A task state."""


class ErrorCode(StrEnum):
    """Stable codes that routing and callers decide on; never parse the detail text."""

    SOURCE_UNREADABLE = "SOURCE_UNREADABLE"
    INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"
    INVALID_INPUT = "INVALID_INPUT"
    INVALID_OUTPUT = "INVALID_OUTPUT"
    QUOTE_NOT_FOUND = "QUOTE_NOT_FOUND"
    UNKNOWN_CLAIM = "UNKNOWN_CLAIM"
    UNCITED_SENTENCE = "UNCITED_SENTENCE"
    UNSUPPORTED_SENTENCE = "UNSUPPORTED_SENTENCE"
    CONSTRAINT_VIOLATED = "CONSTRAINT_VIOLATED"
    MISSING_SECTION = "MISSING_SECTION"
    EMPTY_SECTION = "EMPTY_SECTION"
    OFF_TOPIC_SECTION = "OFF_TOPIC_SECTION"
    QUESTION_NOT_ADDRESSED = "QUESTION_NOT_ADDRESSED"
    WRONG_ANSWER_TYPE = "WRONG_ANSWER_TYPE"
    NO_DIRECT_ANSWER = "NO_DIRECT_ANSWER"
    FRAGMENT = "FRAGMENT"
    OFF_TOPIC_SENTENCE = "OFF_TOPIC_SENTENCE"
    NON_PROSE_QUOTED = "NON_PROSE_QUOTED"
    DANGLING_REFERENCE = "DANGLING_REFERENCE"
    SOURCE_NOT_LISTED = "SOURCE_NOT_LISTED"
    EMPTY_ARTICLE = "EMPTY_ARTICLE"
    APPARATUS_ALTERED = "APPARATUS_ALTERED"
    REVIEW_REJECTED = "REVIEW_REJECTED"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    STALE_INPUT = "STALE_INPUT"
    INTEGRITY_ERROR = "INTEGRITY_ERROR"
    MISSING_INPUT = "MISSING_INPUT"
    TRANSIENT = "TRANSIENT"
    HUMAN_REJECTED = "HUMAN_REJECTED"
    HUMAN_ABORTED = "HUMAN_ABORTED"
    INTERNAL = "INTERNAL"


ErrorKind = Literal[
    "transient",
    "invalid_output",
    "insufficient_evidence",
    "stale_input",
    "budget_exhausted",
    "refused_input",
    "internal",
]
"""Recovery class of a failed node attempt; the workflow picks the recovery by kind."""


class ErrorDetail(Contract):
    """One problem found by a step, specific enough to act on without reading prose."""

    code: ErrorCode = Field(description="Stable error code.")
    detail: str = Field(max_length=2000, description="Human-readable explanation.")
    source_id: Identifier | None = Field(
        default=None, description="Source the problem concerns, when there is one."
    )
    claim_id: Identifier | None = Field(
        default=None, description="Claim the problem concerns, when there is one."
    )
    field: str | None = Field(
        default=None, max_length=200, description="Input field the problem concerns, if any."
    )
