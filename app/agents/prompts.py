"""Every prompt the model-backed agents send, and the JSON shape each reply must have.

Prompts are built from contracts only: the objective, the constraints in force, the facts
an agent needs, the last review's required changes and accepted decisions. Nothing is
carried over from an earlier call (no transcript, no previous draft), so a prompt's size
depends on the task and the facts, not on how many rounds came before. Long items are
capped so one odd input cannot blow a prompt up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from app.agents.prompt_inputs import clip, constraint_lines, line
from app.agents.replies import DraftReply, ResearchReply, ReviewReply, reply_format
from contracts import Decision, Fact, Question, RequiredChange, TaskSpec
from graphs.tools import SEARCH_CORPUS

Prompt = list[BaseMessage]

MAX_CHANGES_SHOWN = 12
"""Required changes shown to the Writer (the last review's only, first ones first)."""
MAX_DECISIONS_SHOWN = 5
"""Accepted decisions shown to the Writer (the latest ones)."""
MAX_BODY_CHARS = 24_000
"""Longest draft body shown to the Reviewer; the deterministic checks read all of it."""
MAX_INVALID_CHARS = 8_000
"""Longest invalid reply quoted back in a repair prompt."""


RESEARCH_SYSTEM = """You are the Research agent of a research -> write -> review workflow.
From the passages below, propose claims that help answer the questions.
- Each claim is one short statement in plain prose that says no more than its quote.
- source_id is the [src-N] tag of the passage the quote comes from.
- quote is copied exactly, character for character, from that one passage. A claim whose
  quote is not found verbatim in the passage is discarded, never used.
- Prefer claims that cover different questions and sources; propose at most {max_claims}.
- If you are offered tools, you may call {search} first to find passages not shown
  here; a quote may come from a passage a search returned (its source_id and text)."""

WRITER_SYSTEM = """You are the Writer of a research -> write -> review workflow.
Write a markdown article that meets the objective, from the facts listed only.
- Start with a '# ' title, then one paragraph that answers the objective (q-1) directly,
  before any heading; then one '## ' section per required section and per sub-question
  (q-2, …), titled by its topic, never by a source or a file; write no heading with
  nothing under it.
- Order the sentences so each follows from the last; leave out any fact relevant to no
  question, however much room is left.
- Answer a question that asks for a number, a year, a person or a place with a fact that
  holds one, or leave it unanswered.
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
    lines = [f"Objective: {line(task.objective)}", "", "Questions:"]
    lines += [f"- {question.id}: {line(question.text)}" for question in questions]
    lines += list(inputs)
    lines += ["", "Passages:"]
    lines += [f"[{excerpt.source_id}] {line(excerpt.text)}" for excerpt in excerpts]
    system = RESEARCH_SYSTEM.format(max_claims=max_claims, search=SEARCH_CORPUS.name)
    return [SystemMessage(f"{system}\n\n{reply_format(ResearchReply)}"), _human(lines)]


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
    lines = [f"Objective: {line(task.objective)}", "", *constraint_lines(task.constraints)]
    if decisions:
        lines += ["", "Decisions already made (do not revisit):"]
        lines += [f"- {clip(item.text)}" for item in decisions[-MAX_DECISIONS_SHOWN:]]
    lines += ["", "Facts (cite as [claim-N]):"]
    for fact in facts:
        after = f" (after [{fact.leans_on}])" if fact.leans_on else ""
        lines.append(f"[{fact.id}] {line(fact.statement)}{after}")
        if fact.claim is not None and fact.quote != fact.claim:
            lines.append(f'    quote from {fact.source_id}: "{line(fact.quote)}"')
    lines += list(inputs)
    if excluded:
        lines += ["", f"Never cite (rejected by review): {', '.join(excluded)}"]
    lines += ["", f"This is draft revision {revision}."]
    if changes:
        lines += ["Required changes from the review of the previous draft:"]
        lines += [_change(change) for change in changes[:MAX_CHANGES_SHOWN]]
        if len(changes) > MAX_CHANGES_SHOWN:
            lines.append(f"- ... and {len(changes) - MAX_CHANGES_SHOWN} more of the same kinds")
    return [SystemMessage(f"{WRITER_SYSTEM}\n\n{reply_format(DraftReply)}"), _human(lines)]


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
    lines = [f"Objective: {line(task.objective)}", "", *constraint_lines(task.constraints)]
    lines += list(inputs)
    lines += ["", "Facts the draft cites (verified against their sources):"]
    lines += [f'[{fact.id}] {line(fact.statement)} (quote: "{line(fact.quote)}")' for fact in facts]
    lines += ["", "Findings of the deterministic checks:"]
    lines += [_change(change) for change in findings[:MAX_CHANGES_SHOWN]] or ["- none"]
    shown = body if len(body) <= MAX_BODY_CHARS else body[:MAX_BODY_CHARS] + "\n[truncated]"
    lines += ["", f"Draft revision {revision}:", "<<<", shown.rstrip(), ">>>"]
    return [SystemMessage(f"{REVIEWER_SYSTEM}\n\n{reply_format(ReviewReply)}"), _human(lines)]


def repair_prompt(schema: type[BaseModel], errors: str, invalid: str) -> Prompt:
    """A repair: the schema, the validation errors and the invalid reply; no transcript."""
    shown = invalid if len(invalid) <= MAX_INVALID_CHARS else invalid[:MAX_INVALID_CHARS] + "…"
    lines = ["Validation errors:", clip(errors, 2000), "", "Your reply was:", "<<<", shown, ">>>"]
    return [SystemMessage(f"{REPAIR_SYSTEM}\n\n{reply_format(schema)}"), _human(lines)]


def size(prompt: Sequence[BaseMessage]) -> int:
    """Characters of text in a prompt (what the prompt-size checks measure)."""
    return sum(len(message.text) for message in prompt)


def _change(change: RequiredChange) -> str:
    where = change.claim_id or change.section
    return f"- {change.code.value}{f' ({where})' if where else ''}: {clip(change.reason)}"


def _human(lines: list[str]) -> HumanMessage:
    return HumanMessage("\n".join(lines))
