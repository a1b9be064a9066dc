"""Checking a handoff's pinned inputs before a consumer reads them.

A handoff is a promise about specific revisions. Before a node consumes an artifact or
relies on a source it re-checks the pin: the artifact's head revision and blob hash in the
store, and the source's current bytes where it was read from.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any, get_args

from pydantic import BaseModel

from contracts import (
    ArtifactRef,
    DraftArticle,
    FreshnessReport,
    Handoff,
    RefCheck,
    RefStatus,
    ResearchBundle,
)
from graphs.errors import IntegrityError, SourceRefused, StaleInput
from graphs.ports import ArtifactStore, SourceProbe, scoped_artifact_id

RESEARCH, DRAFT = "research", "draft"
"""The state channel each checked input was handed over in (a check's ``producer``)."""
SEVERITY: dict[RefStatus, int] = {"fresh": 0, "stale": 1, "missing": 2, "tampered": 3}
OWN_RULES = frozenset({RESEARCH, DRAFT, "handoff", "decisions", "outcome", "branches"})
"""Channels whose artifact references follow rules of their own: research's and the draft's
are checked by ``graphs.stale.guard`` under the task's ``on_stale`` policy; the envelope's
are the pins themselves; a person's evidence and a run's recorded end are records; a
branch's results are its join's to merge. A reference in any other channel, a contract a
project adds included, is pinned in the envelope and checked before a node reads it
(``refuse_changed``)."""


@functools.cache
def may_hold_refs(kind: type[BaseModel]) -> bool:
    """Whether a contract's fields can reach an ``ArtifactRef`` (asked once per class)."""
    if issubclass(kind, ArtifactRef):
        return True

    def reaches(annotation: Any) -> bool:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation is not kind and may_hold_refs(annotation)
        return any(reaches(arg) for arg in get_args(annotation))

    return any(reaches(field.annotation) for field in kind.model_fields.values())


def refs_in(value: Any) -> Iterator[ArtifactRef]:
    """Every artifact reference inside a contract value, in field order, however deep."""
    if isinstance(value, ArtifactRef):
        yield value
    elif isinstance(value, BaseModel):
        if may_hold_refs(type(value)):
            for name in type(value).model_fields:
                yield from refs_in(getattr(value, name))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from refs_in(item)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from refs_in(item)


def refs_of(state: Mapping[str, Any]) -> Iterator[tuple[str, ArtifactRef]]:
    """Each reference in the channels of ``state`` outside ``OWN_RULES``, with its channel."""
    for channel in state:
        if channel not in OWN_RULES:
            for ref in refs_in(state[channel]):
                yield channel, ref


def check_artifact(
    name: str, producer: str, ref: ArtifactRef, store: ArtifactStore, *, owned_id: str | None = None
) -> RefCheck | None:
    """One artifact ref against the store; None when it is fresh (the report lists problems).

    Fresh means the ref is the store's own record of its head revision, so only a
    problem needs the head looked up. ``owned_id`` is the id this thread's artifact in
    that place has: a ref to any other id (another thread's draft or snapshot, put into
    state by an edit) is refused as tampered, whatever the store says of it.
    """
    foreign = owned_id is not None and ref.artifact_id != owned_id
    status: RefStatus = "tampered" if foreign else store.verify(ref)
    if status == "fresh":
        return None
    head = None if foreign else store.head(ref.artifact_id)
    return RefCheck(
        name=name,
        kind="artifact",
        producer=producer,
        uri=ref.uri,
        recorded_revision=ref.revision,
        recorded_sha256=ref.sha256,
        current_revision=head.revision if head else None,
        current_sha256=head.sha256 if head else None,
        status=status,
        detail=f"{ref.artifact_id} is not this thread's artifact (expected {owned_id})"
        if foreign
        else None,
    )


def check_source_file(name: str, uri: str, pinned: str, probe: SourceProbe) -> RefCheck | None:
    """One source against where it was read from; None when it is unchanged.

    A source the probe refuses to read (its URI now leads outside the corpus roots, to a
    device, ...) is ``missing``, with the refusal as the check's detail: the thread's policy
    handles it like any other missing input, and nothing is read.
    """
    detail: str | None = None
    try:
        current = probe.current_sha256(uri)
    except SourceRefused as error:
        current, detail = None, error.message[:1000]
    if current == pinned:
        return None
    return RefCheck(
        name=name,
        kind="source",
        producer=RESEARCH,
        uri=uri,
        recorded_sha256=pinned,
        current_sha256=current,
        status="missing" if current is None else "stale",
        detail=detail,
    )


def check_inputs(
    node: str,
    *,
    store: ArtifactStore,
    probe: SourceProbe,
    bundle: ResearchBundle | None,
    handoff: Handoff | None,
    draft: DraftArticle | None,
    previous: FreshnessReport | None,
    thread_id: str | None = None,
) -> FreshnessReport:
    """Check everything this consumer is about to rely on; reads no content it returns.

    With ``thread_id``, every artifact must also be that thread's own.
    """

    def owned(name: str) -> str | None:
        return scoped_artifact_id(thread_id, name) if thread_id is not None else None

    checks: list[RefCheck | None] = []
    if bundle is not None:
        pinned = {item.uri: item.sha256 for item in handoff.authoritative_inputs} if handoff else {}
        for source in bundle.sources:
            checks.append(
                check_source_file(
                    f"source {source.id}", source.uri, pinned.get(source.uri, source.sha256), probe
                )
            )
            checks.append(
                check_artifact(
                    f"snapshot of {source.id}",
                    RESEARCH,
                    source.snapshot,
                    store,
                    owned_id=owned(source.id),
                )
            )
        for ref in bundle.artifact_refs:
            checks.append(
                check_artifact(
                    f"research {ref.kind}", RESEARCH, ref, store, owned_id=owned(ref.kind)
                )
            )
    if draft is not None:
        checks.append(
            check_artifact(
                f"draft revision {draft.revision}",
                DRAFT,
                draft.body,
                store,
                owned_id=owned(draft.body.kind),
            )
        )
    problems = [check for check in checks if check is not None]
    verdict: RefStatus = max(
        (check.status for check in problems), key=SEVERITY.__getitem__, default="fresh"
    )
    rounds = (previous.round if previous and previous.verdict != "fresh" else 0) + (
        1 if verdict != "fresh" else 0
    )
    return FreshnessReport(
        node=node,
        verdict=verdict,
        checked=len(checks),
        checks=problems,
        round=rounds if verdict != "fresh" else 0,
    )


def refuse_changed(
    node: str, inputs: Mapping[str, Any], store: ArtifactStore, thread_id: str
) -> None:
    """Refuse a node's inputs when an artifact they reference is not the one handed over.

    ``inputs`` are the channels the node reads, validated. Only research and the draft have
    producers the task's ``on_stale`` policy routes back to; for any other reference a
    changed, missing or foreign artifact stops the node before its body: nothing is
    consumed, and the thread waits at this step.
    """
    found = list(refs_of(inputs))
    owned = scoped_artifact_id(thread_id, "")
    foreign = [
        f"{channel} {ref.uri}" for channel, ref in found if not ref.artifact_id.startswith(owned)
    ]
    if foreign:
        raise IntegrityError(
            f"{node} refused its inputs: {', '.join(foreign)} is not this thread's artifact "
            f"(the ids of thread {thread_id!r} start {owned!r}); nothing was consumed"
        )
    checks = [
        check_artifact(f"{channel} {ref.uri}@{ref.revision}", channel, ref, store)
        for channel, ref in found
    ]
    problems = [check for check in checks if check is not None]
    if not problems:
        return
    described = "; ".join(f"{check.name}: {check.status}" for check in problems)
    if any(check.status == "tampered" for check in problems):
        raise IntegrityError(
            f"{node} refused its inputs: {described}; nothing was consumed and the thread "
            "waits at this step: restore the stored bytes and resume it, or cancel it"
        )
    raise StaleInput(
        f"{node} refused its inputs: {described}; they changed since they were handed over "
        "and nothing was consumed. The thread waits at this step: revise the task so their "
        "producer runs again, or cancel it (the task's on_stale policy routes changes of "
        f"{RESEARCH} and the {DRAFT} only)"
    )


def summary(report: FreshnessReport) -> list[str]:
    """Audit lines: how many inputs were checked, and each one that was not fresh."""
    problems = [
        f"{check.name}: {check.status}" + (f" ({check.detail})" if check.detail else "")
        for check in report.checks
    ]
    return [f"{report.checked} inputs checked: {report.verdict}", *problems]
