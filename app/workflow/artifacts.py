"""A thread's artifacts: named, read back verified, and revised by a person."""

from __future__ import annotations

from typing import Literal

from app.corpus.citations import (
    SOURCE_ID,
    SourceEntry,
    find_source,
    list_sources,
    marked_source,
    snapshot_ref,
)
from app.errors import (
    InvalidEdit,
    UnknownArtifactName,
)
from app.text.publishable import publishable
from app.workflow.opened import Opened
from app.workflow.reading import ThreadReader
from contracts import (
    ArtifactRef,
    DraftArticle,
    NodeRun,
    ResearchBundle,
    ReviewResult,
    RunOutcome,
    TaskSpec,
)
from graphs.boundary import read
from graphs.errors import IntegrityError
from graphs.freshness import refs_of
from graphs.ports import scoped_artifact_id

ArtifactName = Literal["article", "draft", "notes", "research", "review"]
ARTIFACT_NAMES: tuple[str, ...] = ("article", "draft", "notes", "research", "review")
EDITABLE_ARTIFACTS: tuple[str, ...] = ("draft",)


class Artifacts:
    """A thread's artifacts and sources, read and verified; a person's edit stored."""

    def __init__(self, opened: Opened, reader: ThreadReader) -> None:
        self.opened = opened
        self.reader = reader

    def artifact_ref(self, thread_id: str, name: str) -> ArtifactRef:
        """Only the thread's own is answered (:func:`owned`), whoever asks by its name.

        Besides the shipped names, an artifact of a kind a project's node stores is named
        by its kind (``outline``), found in whichever contract of the state holds it.
        """
        if SOURCE_ID.match(name):
            values = self.reader.values(thread_id)
            research = read(values, "research", ResearchBundle, node="workflow")
            return owned_snapshot(thread_id, research, name)
        values = self.reader.values(thread_id)
        if name not in ARTIFACT_NAMES:
            kinds = {ref.kind: ref for _, ref in refs_of(values)}  # a node a project added
            if name in kinds:
                return owned(thread_id, name, kinds[name])
            raise UnknownArtifactName(
                f"unknown artifact {name!r}; expected one of "
                f"{', '.join(sorted({*ARTIFACT_NAMES, *kinds}))}, or a source id such as src-1 "
                f"(list them: `handoff sources {thread_id}`)"
            )
        ref: ArtifactRef | None = None
        if name == "article":
            outcome = read(values, "outcome", RunOutcome, node="workflow")
            ref = outcome.article if outcome else None
        elif name == "draft":
            draft = read(values, "draft", DraftArticle, node="workflow")
            ref = draft.body if draft else None
        elif name in ("notes", "research"):
            bundle = read(values, "research", ResearchBundle, node="workflow")
            ref = bundle.artifact_refs[0] if bundle and bundle.artifact_refs else None
        elif name == "review":
            review = read(values, "review", ReviewResult, node="workflow")
            ref = review.report if review else None
        if ref is None:
            raise UnknownArtifactName(f"thread {thread_id!r} has no {name} artifact yet")
        return owned(thread_id, ref.kind, ref)

    def artifact(self, thread_id: str, name: str) -> bytes:
        """Verified by the store against the hash the thread recorded."""
        return self.opened.context.store.get(self.artifact_ref(thread_id, name))

    def sources(self, thread_id: str) -> list[SourceEntry]:
        """Every source must be the thread's own snapshot (:func:`owned`), or none is listed."""
        values = self.reader.values(thread_id)
        research = read(values, "research", ResearchBundle, node="workflow")
        for source in research.sources if research is not None else ():
            owned(thread_id, source.id, source.snapshot)
        draft = read(values, "draft", DraftArticle, node="workflow")
        return list_sources(research, draft, self.opened.context.store)

    def source_text(self, thread_id: str, source_id: str) -> str:
        """Refused (IntegrityError) unless the snapshot is the thread's own (:func:`owned`)."""
        values = self.reader.values(thread_id)
        research = read(values, "research", ResearchBundle, node="workflow")
        owned_snapshot(thread_id, research, source_id)
        return marked_source(
            research,
            read(values, "draft", DraftArticle, node="workflow"),
            source_id,
            self.opened.context.store,
            thread_id,
        )

    def put_artifact(self, thread_id: str, name: str, content: bytes, editor: str) -> ArtifactRef:
        """Stored as a new revision of the same artifact id, with an audit row of the edit."""
        if name not in EDITABLE_ARTIFACTS:
            raise UnknownArtifactName(
                f"artifact {name!r} cannot be edited; editable: {', '.join(EDITABLE_ARTIFACTS)}"
            )
        current = self.artifact_ref(thread_id, name)
        if current.media_type.startswith("text/"):
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidEdit(
                    f"the new {name} is not UTF-8 text (byte {error.start} cannot be decoded); "
                    f"nothing was stored and the thread keeps revision {current.revision}"
                ) from None
            if current.media_type == "text/markdown":
                content = publishable(text).encode("utf-8")
        context = self.opened.context
        ref = context.store.put(current.artifact_id, current.kind, content, current.media_type)
        now = context.clock()
        task = read(self.reader.values(thread_id), "task", TaskSpec, node="workflow")
        edit = NodeRun(
            task_version=task.task_version if task else 1,
            node_id=f"edit:{name} by {editor}",
            attempt=1,
            status="succeeded",
            input_hash=ref.sha256,
            started_at=now,
            ended_at=now,
            duration_ms=0,
            artifact_ids=[f"{ref.artifact_id}@{ref.revision}"],
        )
        seq = self.opened.ledger.start(thread_id, edit)
        self.opened.ledger.finish(thread_id, seq, edit)
        return ref


def owned_snapshot(thread_id: str, research: ResearchBundle | None, source_id: str) -> ArtifactRef:
    """The snapshot ref of a source research read, when it is the thread's own (``owned``)."""
    return owned(thread_id, source_id, snapshot_ref(find_source(research, source_id, thread_id)))


def owned(thread_id: str, name: str, ref: ArtifactRef) -> ArtifactRef:
    """The ref, when it is the thread's own artifact (``<thread>-<name>``); else refused.

    State is not proof of ownership: a copied server thread (``threads.copy``) or an edited
    one names another thread's artifacts. Reading them by this thread's name would serve
    another thread's bytes, and an edit would store a new revision of another thread's
    draft; finalize refuses such a ref as tampered, and so does every read here.
    """
    expected = scoped_artifact_id(thread_id, name)
    if ref.artifact_id != expected:
        raise IntegrityError(
            f"thread {thread_id!r} names {ref.artifact_id} as its {name}, which is not this "
            f"thread's artifact (expected {expected}); a copied or edited thread's state "
            "names another thread's artifacts, and they are not served from it"
        )
    return ref
