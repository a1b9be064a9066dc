"""The research notes: which sources were read, and what addresses each question, ranked.

Stored as an artifact beside the bundle, so a person can see why a question stayed open
or why a sentence was chosen, with each hit's file, lines, offsets and score.
"""

from __future__ import annotations

from app.agents.apparatus import file_name
from app.agents.passages import Retrieval
from contracts import TaskSpec


def research_notes(task: TaskSpec, found: Retrieval) -> str:
    """The notes of one retrieval, as markdown."""
    lines = [f"# Research notes: {task.objective}", "", "## Sources read", ""]
    lines += [
        f"- {source.id}: *{source.title}*, {file_name(source)} (sha256 {source.sha256[:12]})"
        for source in found.sources
    ]
    lines.append("")
    queries = [
        *(
            (f"{question.id}: {question.text}", found.ranked[question.id])
            for question in found.questions
        ),
        *((f"section {title!r}", hits) for title, hits in found.sections.items()),
    ]
    for heading, hits in queries:
        lines += [f"## {heading}", ""]
        if not hits:
            lines += ["No sentence in the corpus addresses it.", ""]
        for rank, (index, score) in enumerate(hits, start=1):
            passage = found.passages[index]
            lines.append(
                f"{rank}. [{passage.source.id} {file_name(passage.source)}, lines "
                f"{passage.lines.first}-"
                f"{passage.lines.last}, chars {passage.sentence.start}-"
                f"{passage.sentence.end}, score {score:.3f}] {passage.sentence.plain}"
            )
        lines.append("")
    return "\n".join(lines)
