"""The audit ledger of ``memory://`` runs and tests: kept for the life of the process only."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from app.storage.ledger.base import abandoned
from contracts import NodeRun
from graphs.budget import Tally, tally_of


@dataclass
class _Entry:
    run: NodeRun
    result: str | None = None


class MemoryRunLedger:
    """For ``memory://`` runs and tests: kept for the life of the process only."""

    outlives_process = False
    """Refused beside checkpoints that outlive the process (``check_kept_with``)."""

    def __init__(self) -> None:
        self._entries: dict[str, list[_Entry]] = {}
        self._effects: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def tool_effect(self, thread_id: str, call_id: str) -> str | None:
        """What the thread's write call ``call_id`` did (receipt, output as JSON), if it ran."""
        with self._lock:
            return self._effects.get((thread_id, call_id))

    def record_tool_effect(self, thread_id: str, call_id: str, effect: str) -> None:
        """Record that the write call ran; the first record of a call stands."""
        with self._lock:
            self._effects.setdefault((thread_id, call_id), effect)

    def start(self, thread_id: str, run: NodeRun) -> int:
        """Record an attempt that is starting; returns its sequence number."""
        with self._lock:
            entries = self._entries.setdefault(thread_id, [])
            entries.append(_Entry(NodeRun.model_validate(run)))
            return len(entries)

    def finish(self, thread_id: str, seq: int, run: NodeRun, result: str | None = None) -> None:
        """Replace the attempt's record with its final state (and result, if it succeeded)."""
        with self._lock:
            self._entries[thread_id][seq - 1] = _Entry(NodeRun.model_validate(run), result)

    def runs(self, thread_id: str) -> list[NodeRun]:
        """Every record of the thread, oldest first."""
        with self._lock:
            return [entry.run for entry in self._entries.get(thread_id, [])]

    def result(self, thread_id: str, node_id: str, input_hash: str) -> str | None:
        """The stored update of a succeeded attempt with this input, if any."""
        with self._lock:
            for entry in reversed(self._entries.get(thread_id, [])):
                run = entry.run
                if (
                    run.node_id == node_id
                    and run.input_hash == input_hash
                    and run.status == "succeeded"
                    and entry.result is not None
                ):
                    return entry.result
        return None

    def latest_result(self, thread_id: str, node_id: str) -> str | None:
        """The stored update of the node's latest succeeded attempt, whatever its input."""
        with self._lock:
            for entry in reversed(self._entries.get(thread_id, [])):
                run = entry.run
                if run.node_id == node_id and run.status == "succeeded" and entry.result:
                    return entry.result
        return None

    def tally(
        self, thread_id: str, node_id: str, input_hash: str, fanned: Sequence[str] = ()
    ) -> Tally:
        """The thread's records summed for a visit of ``node_id`` on ``input_hash``."""
        return tally_of(self.runs(thread_id), node_id, input_hash, fanned)

    def abandon_running(self, thread_id: str, detail: str) -> int:
        """Mark attempts left 'running' by a process that died as failed; returns how many."""
        with self._lock:
            count = 0
            for entry in self._entries.get(thread_id, []):
                if entry.run.status == "running":
                    entry.run = abandoned(entry.run, detail)
                    count += 1
            return count

    def close(self) -> None:
        """Nothing to release."""
