"""A node remembers across threads through LangGraph's store, kept where the checkpoints are.

``runtime.store`` in a node the Workflow runs is LangGraph's store of the database URL: what
one thread put, a later thread reads, after the Workflow was closed and opened again; with
an encryption key the stored value is sealed.
"""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from pydantic import Field
from typing_extensions import TypedDict

from app.settings import Settings
from app.storage.encryption import new_key
from app.storage.langgraph_store import SealedStore
from app.workflow import Workflow
from contracts import TaskSpec, VersionedContract
from graphs import RunContext, node
from graphs.routing import STOP


class Recall(VersionedContract):
    """How many runs, in any thread, this node saw before this one."""

    kind: Literal["recall"] = Field(default="recall", description="Discriminator.")
    earlier: int = Field(ge=0, description="Runs before this one.")

    EXAMPLES = [{"earlier": 2}]


class RememberInput(TypedDict):
    task: TaskSpec


class RememberOutput(TypedDict, total=False):
    recall: Recall | None


@node("remember", reads=RememberInput, writes=RememberOutput, terminal=True)
def remember(state: RememberInput, runtime: Runtime[RunContext]) -> RememberOutput:
    """Counts the runs before it in LangGraph's store, as a plain LangGraph node would."""
    assert runtime.store is not None, "the Workflow compiles its graph with a store"
    earlier = runtime.store.get(("runs",), "count")
    seen = int(earlier.value["runs"]) if earlier else 0
    runtime.store.put(("runs",), "count", {"runs": seen + 1, "last": state["task"].objective})
    return {"recall": Recall(earlier=seen)}


WIRING = ((remember, STOP),)
OBJECTIVE = "Remember the number of runs"


def recalled(settings: Settings, thread: str) -> int:
    """What a run in a new thread of a newly opened Workflow recalled."""
    with Workflow(settings, wiring=WIRING) as workflow:
        workflow.run(workflow.task(OBJECTIVE), thread)
        recall: Recall = workflow.state(thread)["recall"]
        return recall.earlier


def test_what_one_thread_put_a_later_thread_reads_after_the_workflow_reopens(
    settings: Settings,
) -> None:
    assert [recalled(settings, f"t-mem-{n}") for n in range(3)] == [0, 1, 2]


def test_with_an_encryption_key_the_stored_value_is_sealed(settings: Settings) -> None:
    sealed = settings.with_overrides(encryption_key=new_key())
    assert [recalled(sealed, f"t-seal-{n}") for n in range(2)] == [0, 1]
    with Workflow(sealed, wiring=WIRING) as workflow:
        store = workflow.backend.langgraph_store
        assert isinstance(store, SealedStore)
        stored = store.inner.get(("runs",), "count")
        assert stored is not None and set(stored.value) == {"sealed"}
        assert OBJECTIVE not in str(stored.value)
        opened = store.get(("runs",), "count")
        assert opened is not None and opened.value == {"runs": 2, "last": OBJECTIVE}


def test_a_workflow_opened_to_read_opens_no_store(settings: Settings) -> None:
    recalled(settings, "t-mem-read")
    with Workflow(settings, wiring=WIRING, read_only=True) as workflow:
        assert workflow.backend.langgraph_store is None
        assert workflow.state("t-mem-read")["recall"] == Recall(earlier=0)
