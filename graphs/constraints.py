"""Constraints in force: the task's own, plus those a human added during the run."""

from __future__ import annotations

import re

from contracts import Constraints, Handoff, TaskSpec

_MAX_WORDS = re.compile(
    r"\b(?:at most|no more than|max(?:imum)?|under|≤)\s*(\d{2,5})\s+words\b", re.I
)
_SECTION = re.compile(r"^\s*(?:include a |add a )?section\s*[:\-]\s*(.+?)\s*$", re.I)


def effective_constraints(task: TaskSpec, handoff: Handoff | None) -> Constraints:
    """Task constraints tightened by human-added ones (checkable phrases become checks).

    "at most 120 words" lowers the word limit; "section: Sources" adds a required section;
    anything else stays a prose note that agents receive verbatim.
    """
    max_words = task.constraints.max_words
    sections = list(task.constraints.required_sections)
    notes = list(task.constraints.notes)
    for item in handoff.constraints if handoff else []:
        if item.provenance.producer != "human":
            continue
        words = _MAX_WORDS.search(item.text)
        section = _SECTION.match(item.text)
        if words:
            limit = int(words.group(1))
            max_words = limit if max_words is None else min(max_words, limit)
        elif section:
            if section.group(1) not in sections:
                sections.append(section.group(1))
        elif item.text not in notes:
            notes.append(item.text)
    return Constraints(max_words=max_words, required_sections=sections, notes=notes)


def task_in_force(task: TaskSpec, handoff: Handoff | None) -> TaskSpec:
    """The task as agents must see it: with every constraint in force applied."""
    return task.model_copy(update={"constraints": effective_constraints(task, handoff)})
