"""A how-to corpus whose answer is a code example, researched and written by the offline agents."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from app.agents import OfflineResearchAgent, OfflineWriterAgent
from app.settings import Settings
from app.storage.artifacts import FilesystemArtifactStore
from contracts import DraftArticle, Fact, Handoff, ResearchBundle, TaskSpec
from graphs import ResearchRequest, StepInfo, WriteRequest
from tests.conftest import write_corpus

HOWTO = """\
# Running kiln jobs

## Starting a job

A kiln job runs one recipe against one input folder and writes its results beside it.
To start a kiln job on a folder of photos, run the kiln start command with the recipe name:

```bash
kiln start --recipe thumbnails ./photos
kiln status
```

The job runs in the background, and kiln status shows how far it has come.
"""
QUESTION = "How do I start a kiln job on a folder of photos?"
CODE = "kiln start --recipe thumbnails ./photos\nkiln status"


@dataclass
class Written:
    """What research and the writer made of the corpus for the question."""

    task: TaskSpec
    store: FilesystemArtifactStore
    bundle: ResearchBundle
    draft: DraftArticle

    @property
    def body(self) -> str:
        return self.store.get(self.draft.body).decode()

    @property
    def introducing(self) -> Fact:
        return next(fact for fact in self.bundle.facts if fact.example is not None)


def step(node: str) -> StepInfo:
    return StepInfo(thread_id="t", node=node, step=1, task_version=1)


def research_and_write(
    folder: Path, max_words: int | None = None, *, text: str = HOWTO, question: str = QUESTION
) -> Written:
    """The offline research and writer on a one-file corpus (``text``) for ``question``."""
    corpus = write_corpus(folder / "corpus", {"kiln.md": text})
    constraints = {"max_words": max_words} if max_words else {}
    task = TaskSpec(task_id="t", objective=question, corpus=[str(corpus)], constraints=constraints)
    store = FilesystemArtifactStore(folder / "artifacts")
    research = OfflineResearchAgent(
        default_corpus=[corpus],
        clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
        policy=Settings(corpus_roots=[corpus]).corpus_policy(),
    )
    bundle = research.run(ResearchRequest(task, store, step("research"))).result
    handoff = Handoff.model_validate({**Handoff.EXAMPLES[0], "open_questions": []})
    request = WriteRequest(task, handoff, bundle, None, None, store, step("writer"))
    draft = OfflineWriterAgent().run(request).result
    return Written(task, store, bundle, draft)
