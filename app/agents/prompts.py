"""Every prompt the model-backed agents send, and the JSON shape each reply must have.

Prompts are built from contracts only: the objective, the constraints in force, the facts
an agent needs, the last review's required changes and accepted decisions. Nothing is
carried over from an earlier call (no transcript, no previous draft), so a prompt's size
depends on the task and the facts, not on how many rounds came before. Long items are
capped so one odd input cannot blow a prompt up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.text.primitives import CITATION
from contracts import Constraints, Decision, Fact, Question, RequiredChange, TaskSpec
from graphs.ports import (
    CONTRIBUTED,
    ResearchRequest,
    ReviewRequest,
    WriteRequest,
    request_channels,
)

Prompt = list[BaseMessage]

MAX_CHANGES_SHOWN = 12
"""Required changes shown to the Writer (the last review's only, first ones first)."""
MAX_DECISIONS_SHOWN = 5
"""Accepted decisions shown to the Writer (the latest ones)."""
MAX_ITEM_CHARS = 300
"""Longest reason, note or decision text quoted into a prompt."""
MAX_BODY_CHARS = 24_000
"""Longest draft body shown to the Reviewer; the deterministic checks read all of it."""
MAX_INVALID_CHARS = 8_000
"""Longest invalid reply quoted back in a repair prompt."""

_CLAIM_ID = r"^claim-[0-9]+$"


# --- reply schemas: what each agent's model must answer -------------------------------


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class ProposedClaim(_Reply):
    """One claim a model proposes from a passage; it becomes a Fact only if verified."""

    claim: str = Field(
        min_length=1,
        max_length=600,
        description="The claim in plain prose, saying no more than the quote says.",
    )
    source_id: str = Field(
        pattern=r"^src-[0-9]+$", description="The [src-N] tag of the passage quoted."
    )
    quote: str = Field(
        min_length=8,
        max_length=1000,
        description="Words copied exactly, character for character, from that one passage.",
    )


class ResearchReply(_Reply):
    """Research's answer: claims, each with a verbatim quote."""

    claims: list[ProposedClaim] = Field(
        max_length=30, description="Claims that help answer the questions, best first."
    )


class DraftReply(_Reply):
    """The Writer's answer: the whole article."""

    markdown: str = Field(
        min_length=1,
        max_length=40_000,
        description="The article in markdown: a '# ' title, '## ' sections, and every "
        "sentence ending with its [claim-N] citations.",
    )

    @field_validator("markdown")
    @classmethod
    def _cites_claims(cls, value: str) -> str:
        if not CITATION.search(value):
            raise ValueError("the article cites no claim: end each sentence with [claim-N]")
        return value


CritiqueCode = Literal[
    "UNSUPPORTED_SENTENCE", "UNCITED_SENTENCE", "CONSTRAINT_VIOLATED", "MISSING_SECTION"
]


class CritiqueItem(_Reply):
    """One change the Reviewer's model asks for."""

    code: CritiqueCode = Field(
        default="CONSTRAINT_VIOLATED",
        description="UNSUPPORTED_SENTENCE: says more than its cited facts; UNCITED_SENTENCE: "
        "no citation; MISSING_SECTION: a required section is missing; CONSTRAINT_VIOLATED: "
        "the objective or a constraint is not met.",
    )
    reason: str = Field(
        min_length=1, max_length=500, description="What to change, so the writer can act on it."
    )
    claim_id: str | None = Field(default=None, pattern=_CLAIM_ID, description="Claim concerned.")
    section: str | None = Field(default=None, max_length=200, description="Section concerned.")


class ReviewReply(_Reply):
    """The Reviewer's answer: a verdict and the changes behind it."""

    verdict: Literal["approve", "changes_requested"] = Field(
        description="approve only if you found nothing to change."
    )
    changes: list[CritiqueItem] = Field(
        default_factory=list, max_length=10, description="Changes needed; empty to approve."
    )

    @model_validator(mode="after")
    def _verdict_matches_changes(self) -> ReviewReply:
        if self.verdict == "approve" and self.changes:
            raise ValueError("verdict 'approve' must come with an empty changes list")
        if self.verdict == "changes_requested" and not self.changes:
            raise ValueError("verdict 'changes_requested' needs at least one change")
        return self


@cache
def schema_text(schema: type[BaseModel]) -> str:
    """The reply's JSON Schema, compact, as shown to the model."""
    return json.dumps(schema.model_json_schema(), separators=(",", ":"), ensure_ascii=False)


def _reply_format(schema: type[BaseModel]) -> str:
    return (
        "Reply with one JSON object and nothing else (no prose, no code fence) that "
        f"validates against this JSON Schema:\n{schema_text(schema)}"
    )


# --- the prompts -----------------------------------------------------------------------

RESEARCH_SYSTEM = """You are the Research agent of a research -> write -> review workflow.
From the passages below, propose claims that help answer the questions.
- Each claim is one short statement in plain prose that says no more than its quote.
- source_id is the [src-N] tag of the passage the quote comes from.
- quote is copied exactly, character for character, from that one passage. A claim whose
  quote is not found verbatim in the passage is discarded, never used.
- Prefer claims that cover different questions and sources; propose at most {max_claims}."""

WRITER_SYSTEM = """You are the Writer of a research -> write -> review workflow.
Write a markdown article that meets the objective, from the facts listed only.
- Start with a '# ' title; put sections under '## ' headings.
- End every sentence with the ids of the facts that support it, before the full stop:
  "The stone was found in 1799 [claim-3]." Cite only ids from the list.
- Say only what the cited facts say; add no outside knowledge.
- Honour every constraint: the word limit counts body words (not headings or citations);
  required sections are '## ' headings with exactly those titles, each holding only facts
  about its title (leave it empty rather than fill it with anything else); follow every note.
- Write prose only: no code blocks, tables, HTML or images.
- Never open a paragraph with a pronoun ("He", "It", "This"): a fact marked "after
  [claim-N]" must follow that fact in the same paragraph.
- Do not write an "Open questions" or "Sources" section: both are appended for you.
- Required changes, when listed, are what the reviewer found in your previous draft:
  fix every one of them."""

REVIEWER_SYSTEM = """You are the Reviewer of a research -> write -> review workflow.
Deterministic checks have already verified every citation against the source bytes, the
word limit and the required sections; their findings are listed and stand whatever you
decide. Read the draft as an editor: does each sentence say only what its cited facts say,
does the article meet the objective, does it follow every note? Reply "approve" with no
changes if you find nothing more to fix; otherwise "changes_requested" with each change:
its code, a reason the writer can act on, and the claim id or section concerned."""

REPAIR_SYSTEM = """Your previous reply could not be used: it does not validate against the
required JSON Schema. Return the same content, corrected so that it validates."""


@dataclass(frozen=True)
class Excerpt:
    """A passage shown to Research: the source it comes from and its exact text."""

    source_id: str
    text: str


def research_prompt(
    task: TaskSpec,
    questions: Sequence[Question],
    excerpts: Sequence[Excerpt],
    max_claims: int,
    inputs: Sequence[str] = (),
) -> Prompt:
    """Research: the objective, its questions and the retrieved passages.

    ``inputs``: the request's other inputs (``request_inputs``), shown after the questions.
    """
    lines = [f"Objective: {_line(task.objective)}", "", "Questions:"]
    lines += [f"- {question.id}: {_line(question.text)}" for question in questions]
    lines += list(inputs)
    lines += ["", "Passages:"]
    lines += [f"[{excerpt.source_id}] {_line(excerpt.text)}" for excerpt in excerpts]
    system = RESEARCH_SYSTEM.format(max_claims=max_claims)
    return [SystemMessage(f"{system}\n\n{_reply_format(ResearchReply)}"), _human(lines)]


def laid_out(request: type[object], *names: str) -> frozenset[str]:
    """The request fields a prompt lays out itself; a name the request lacks fails at import.

    Every other field the node fills from state is rendered by ``request_inputs``, so a
    new input reaches the model without an edit here.
    """
    channels = request_channels(request)
    unknown = sorted(set(names) - set(channels))
    if unknown:
        raise TypeError(f"{request.__name__} has no state fields {unknown}: {sorted(channels)}")
    return frozenset(names)


def request_inputs(request: object, shown: frozenset[str]) -> list[str]:
    """Every state field of the request the prompt does not lay out, with its descriptions.

    A contract is rendered field by field, each under its description (the same text its
    JSON Schema carries); empty fields are left out. What other nodes added for this agent
    to read (the request's ``inputs``, see ``read_by``) is rendered the same way.
    """
    lines: list[str] = []
    given = {name: getattr(request, name) for name in request_channels(type(request))}
    given |= dict(getattr(request, CONTRIBUTED, None) or {})
    for name, value in given.items():
        if name in shown or value is None:
            continue
        title = (type(value).__doc__ or name).strip().splitlines()[0]
        lines += ["", f"{name} ({_line(title)}):"]
        if not isinstance(value, BaseModel):
            lines.append(f"- {_clip(json.dumps(value, default=str))}")
            continue
        for field_name, info in type(value).model_fields.items():
            item = getattr(value, field_name)
            if field_name in ("schema_version", "kind") or item in (None, [], {}, ""):
                continue
            shown_value = item.model_dump(mode="json") if isinstance(item, BaseModel) else item
            text = (
                shown_value
                if isinstance(shown_value, str)
                else json.dumps(shown_value, default=str, ensure_ascii=False)
            )
            lines.append(f"- {_line(info.description or field_name)}: {_clip(text)}")
    return lines


RESEARCH_LAYS_OUT = laid_out(ResearchRequest, "task", "handoff")
"""What ``research_prompt`` shows of a ResearchRequest in its own layout (the handoff's
open questions, through the questions it is given)."""
WRITER_LAYS_OUT = laid_out(WriteRequest, "task", "handoff", "bundle", "previous", "review")
"""What ``writer_prompt`` shows of a WriteRequest in its own layout."""
REVIEWER_LAYS_OUT = laid_out(ReviewRequest, "task", "handoff", "bundle", "draft")
"""What ``reviewer_prompt`` shows of a ReviewRequest in its own layout."""


def writer_prompt(
    task: TaskSpec,
    facts: Sequence[Fact],
    *,
    revision: int,
    changes: Sequence[RequiredChange] = (),
    excluded: Sequence[str] = (),
    decisions: Sequence[Decision] = (),
    inputs: Sequence[str] = (),
) -> Prompt:
    """Writer: objective, constraints, usable facts, the last review's required changes.

    ``inputs``: the request's other inputs (``request_inputs``), shown after the facts.
    """
    lines = [f"Objective: {_line(task.objective)}", "", *_constraints(task.constraints)]
    if decisions:
        lines += ["", "Decisions already made (do not revisit):"]
        lines += [f"- {_clip(item.text)}" for item in decisions[-MAX_DECISIONS_SHOWN:]]
    lines += ["", "Facts (cite as [claim-N]):"]
    for fact in facts:
        after = f" (after [{fact.leans_on}])" if fact.leans_on else ""
        lines.append(f"[{fact.id}] {_line(fact.statement)}{after}")
        if fact.claim is not None and fact.quote != fact.claim:
            lines.append(f'    quote from {fact.source_id}: "{_line(fact.quote)}"')
    lines += list(inputs)
    if excluded:
        lines += ["", f"Never cite (rejected by review): {', '.join(excluded)}"]
    lines += ["", f"This is draft revision {revision}."]
    if changes:
        lines += ["Required changes from the review of the previous draft:"]
        lines += [_change(change) for change in changes[:MAX_CHANGES_SHOWN]]
        if len(changes) > MAX_CHANGES_SHOWN:
            lines.append(f"- ... and {len(changes) - MAX_CHANGES_SHOWN} more of the same kinds")
    return [SystemMessage(f"{WRITER_SYSTEM}\n\n{_reply_format(DraftReply)}"), _human(lines)]


def reviewer_prompt(
    task: TaskSpec,
    body: str,
    facts: Sequence[Fact],
    findings: Sequence[RequiredChange],
    *,
    revision: int,
    inputs: Sequence[str] = (),
) -> Prompt:
    """Reviewer: objective, constraints, the draft, the facts it cites, the checks' findings.

    ``inputs``: the request's other inputs (``request_inputs``), shown after the objective.
    """
    lines = [f"Objective: {_line(task.objective)}", "", *_constraints(task.constraints)]
    lines += list(inputs)
    lines += ["", "Facts the draft cites (verified against their sources):"]
    lines += [
        f'[{fact.id}] {_line(fact.statement)} (quote: "{_line(fact.quote)}")' for fact in facts
    ]
    lines += ["", "Findings of the deterministic checks:"]
    lines += [_change(change) for change in findings[:MAX_CHANGES_SHOWN]] or ["- none"]
    shown = body if len(body) <= MAX_BODY_CHARS else body[:MAX_BODY_CHARS] + "\n[truncated]"
    lines += ["", f"Draft revision {revision}:", "<<<", shown.rstrip(), ">>>"]
    return [SystemMessage(f"{REVIEWER_SYSTEM}\n\n{_reply_format(ReviewReply)}"), _human(lines)]


def repair_prompt(schema: type[BaseModel], errors: str, invalid: str) -> Prompt:
    """A repair: the schema, the validation errors and the invalid reply; no transcript."""
    shown = invalid if len(invalid) <= MAX_INVALID_CHARS else invalid[:MAX_INVALID_CHARS] + "…"
    lines = ["Validation errors:", _clip(errors, 2000), "", "Your reply was:", "<<<", shown, ">>>"]
    return [SystemMessage(f"{REPAIR_SYSTEM}\n\n{_reply_format(schema)}"), _human(lines)]


def size(prompt: Sequence[BaseMessage]) -> int:
    """Characters of text in a prompt (what the prompt-size checks measure)."""
    return sum(len(message.text) for message in prompt)


CONSTRAINTS_LAID_OUT = frozenset({"max_words", "required_sections", "notes"})
"""The constraints ``_constraints`` words itself; any other field is shown under its
description, so a constraint added to the contract reaches the model with no edit here."""
if not CONSTRAINTS_LAID_OUT <= set(Constraints.model_fields):
    raise TypeError(
        f"Constraints has no {sorted(CONSTRAINTS_LAID_OUT - set(Constraints.model_fields))}"
    )


def _constraints(constraints: Constraints) -> list[str]:
    lines = ["Constraints:"]
    if constraints.max_words is not None:
        lines.append(f"- at most {constraints.max_words} words in the body")
    if constraints.required_sections:
        titles = "; ".join(_line(title) for title in constraints.required_sections)
        lines.append(f"- required sections, as '## ' headings: {titles}")
    lines += [f"- note: {_clip(note)}" for note in constraints.notes]
    for name, info in type(constraints).model_fields.items():
        value = getattr(constraints, name)
        if name in CONSTRAINTS_LAID_OUT or name in ("schema_version", "kind"):
            continue
        if value not in (None, [], {}, ""):
            shown = value if isinstance(value, str) else json.dumps(value, default=str)
            lines.append(f"- {_line(info.description or name)}: {_clip(shown)}")
    return lines if len(lines) > 1 else ["Constraints: none"]


def _change(change: RequiredChange) -> str:
    where = change.claim_id or change.section
    return f"- {change.code.value}{f' ({where})' if where else ''}: {_clip(change.reason)}"


def _line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    flat = _line(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _human(lines: list[str]) -> HumanMessage:
    return HumanMessage("\n".join(lines))
