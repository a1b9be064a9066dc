"""A served run takes its thread's lock only from a run of this process that lets go of it.

``make_graph`` waits for a cancelled run of the same thread whose node still runs (the
node's body cannot be stopped), for as long as that node runs, and never longer than it
takes the holder to let go; any other holder is busy at once. A run cancelled while it
waits must never take the lock afterwards.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import ExitStack
from pathlib import Path

import pytest

from app.errors import ThreadBusy
from app.server import take_over as hold
from app.server.running_nodes import RUNNING_NODES

THREAD = "t-take-over"


def cancelled_run_with_its_node_running() -> tuple[ExitStack, threading.Event, threading.Thread]:
    """The state a cancelled served run leaves: lock held, node running, release pending.

    Returns the holder's stack, the event that ends the node, and the thread letting go.
    """
    held = hold.hold_now(THREAD)
    node_ends = threading.Event()
    node_started = threading.Event()

    def node() -> None:
        with RUNNING_NODES.running(THREAD):
            node_started.set()
            node_ends.wait(30)

    threading.Thread(target=node, daemon=True).start()
    node_started.wait(5)
    release = ExitStack()
    release.enter_context(RUNNING_NODES.releasing(THREAD))
    release.push(held.pop_all())
    letting_go = threading.Thread(
        target=hold.release_when_idle, args=(THREAD, release), daemon=True
    )
    letting_go.start()
    return held, node_ends, letting_go


def test_a_superseding_run_waits_as_long_as_the_cancelled_node_runs(
    served_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hold, "DRAIN_SECONDS", 0.2)  # the node outlasts it
    _, node_ends, letting_go = cancelled_run_with_its_node_running()

    async def superseding() -> ExitStack:
        taking = asyncio.create_task(hold.take_over(THREAD))
        await asyncio.sleep(0.6)
        assert not taking.done(), "the new run stopped waiting while the old node ran"
        node_ends.set()
        return await asyncio.wait_for(taking, 10)

    with asyncio.run(superseding()):
        letting_go.join(5)
        with pytest.raises(ThreadBusy):  # the new run holds it now
            hold.hold_now(THREAD)


def test_a_run_cancelled_while_it_waits_never_takes_the_lock(served_folder: Path) -> None:
    _, node_ends, letting_go = cancelled_run_with_its_node_running()

    async def cancelled_while_waiting() -> None:
        taking = asyncio.create_task(hold.take_over(THREAD))
        await asyncio.sleep(0.3)
        taking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await taking
        node_ends.set()
        await asyncio.sleep(0.5)  # long enough for a leaked attempt to have won the lock

    asyncio.run(cancelled_while_waiting())
    letting_go.join(5)
    hold.hold_now(THREAD).close()  # free: nobody took it behind the cancelled run's back


def test_a_holder_outside_this_process_run_is_busy_at_once(served_folder: Path) -> None:
    with hold.hold_now(THREAD):  # held, but no run of this process is letting go

        async def taking() -> None:
            await asyncio.wait_for(hold.take_over(THREAD), 5)

        with pytest.raises(ThreadBusy, match="is busy"):
            asyncio.run(taking())


def test_a_holder_letting_go_during_the_try_is_waited_for(
    served_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The try sees the lock still held, and the holder has let go by the time it is judged."""
    _, node_ends, letting_go = cancelled_run_with_its_node_running()
    real_hold_now = hold.hold_now
    tries: list[str] = []

    def try_while_the_holder_lets_go(thread_id: str) -> ExitStack:
        tries.append(thread_id)
        if len(tries) == 1:
            try:
                real_hold_now(thread_id)  # still held by the cancelled run: busy
            finally:
                node_ends.set()
                letting_go.join(5)  # ... which has let go before the busy is judged
        return real_hold_now(thread_id)

    monkeypatch.setattr(hold, "hold_now", try_while_the_holder_lets_go)
    with asyncio.run(asyncio.wait_for(hold.take_over(THREAD), 10)):
        assert len(tries) == 2
