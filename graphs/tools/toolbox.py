"""The tool boundary: every call a node's agent makes is checked, bounded and receipted.

A call to a tool the node did not declare, with arguments its input contract refuses,
beyond the tool's rate or the task's tool-call budget, or running past its timeout, is
answered with a ``ToolError``; the caller decides what it means for its work. Each call,
answered or refused, leaves one receipt; the runner puts them in the handoff and in the
attempt's audit row, and charges the calls that ran to the budget (``charged``). Each
receipt is on the attempt's row as soon as its call ends (``on_receipt``): an attempt
whose process is killed leaves the calls it made in the audit.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from contracts import ArtifactRef, ToolError, ToolErrorCode, ToolReceipt, Usage
from graphs.errors import MissingContext, Omitted
from graphs.ports import RunLedger
from graphs.tools.bounds import first_problem, summary_of, tool_error, within
from graphs.tools.declare import ToolEnv, ToolFn, ToolSpec
from graphs.trace import TRACED_ATTEMPT


def target_of(spec: ToolSpec, code: Mapping[str, ToolFn], args: BaseModel) -> str | None:
    """What a call of ``spec`` would change, if its code (its own, else ``code``'s) can say.

    A node that asks a person to confirm a write describes it before any toolbox runs it,
    so this needs the tool's code only, not a node that declares the tool.
    """
    describe = getattr(spec.run or code.get(spec.name), "target", None)
    return str(describe(args)) if callable(describe) else None


@dataclass(frozen=True)
class ToolResult:
    """What a caller gets back: the output (or its ref, when trimmed), or the error."""

    receipt: ToolReceipt
    output: Any = None
    """The output contract; None when there is an error or the output was trimmed."""
    ref: ArtifactRef | None = None
    """Where a trimmed output is (its JSON), when it was larger than the tool allows."""

    @property
    def error(self) -> ToolError | None:
        """Why the call gave no output, or None."""
        return self.receipt.error


@dataclass(frozen=True)
class Asked:
    """One call as asked: what its receipt names and shows, and when it began."""

    tool: str
    call_id: str
    shown: str = ""
    """Its input summary: as given, then as validated (sensitive fields never in it)."""
    began: float = field(default_factory=time.perf_counter)


@dataclass
class Toolbox:
    """The tools one attempt of one node may call, with what it has called so far."""

    node: str
    tools: tuple[ToolSpec, ...]
    env: ToolEnv
    code: Mapping[str, ToolFn] = field(default_factory=dict)
    """The code of declared tools that bring none of their own, by name (the run's)."""
    budget: int | None = None
    """Tool calls this attempt may still charge (the task's budget left); None: unlimited."""
    effects: RunLedger | None = None
    """Where the write calls that ran are recorded (the run's ledger); writes need it."""
    on_receipt: Callable[[ToolReceipt], None] | None = None
    """Told each receipt as its call ends (the runner keeps it on the attempt's running
    ledger row at once, so a process killed mid-attempt leaves its calls in the audit)."""
    receipts: list[ToolReceipt] = field(default_factory=list)
    spent: int = 0
    """Tool calls charged so far (calls that ran)."""
    _counts: dict[str, int] = field(default_factory=dict)

    @property
    def allowed(self) -> tuple[str, ...]:
        """The names of the tools the node declared."""
        return tuple(spec.name for spec in self.tools)

    def call(
        self,
        name: str,
        args: Mapping[str, Any] | BaseModel,
        *,
        call_id: str | None = None,
        confirmed: bool = False,
        by_model: bool = False,
    ) -> ToolResult:
        """Call a declared tool; any refusal or failure the tool declares comes back as an error.

        A call to a tool the node does not declare is the code's omission and fails the
        attempt (``Omitted``), so the run cannot succeed without the tool; only a call a
        model emitted (``by_model``) is answered ``permission_denied``, for the model to
        read and correct.

        A write tool runs only ``confirmed`` (a person approved this very call), and at most
        once per thread and ``call_id``: what a call that ran did is recorded in the ledger
        (``effects``) before the caller gets it, and a call recorded there is answered from
        the record without running again.
        """
        asked = Asked(name[:100], call_id or f"{name}-{len(self.receipts) + 1}"[:128])
        spec = next((spec for spec in self.tools if spec.name == name), None)
        if spec is None:
            allowed = list(self.allowed)
            if not by_model:
                raise Omitted(
                    f"node {self.node!r} calls tool {name!r}, which it does not declare; it "
                    f"declares {allowed}: give the tool to the node, "
                    f"@node({self.node!r}, ..., tools=(..., <its ToolSpec>))"
                )
            denied = f"node {self.node!r} may not call {name!r}; it may call {allowed}"
            return self._refuse(asked, "permission_denied", denied)
        raw = args.model_dump() if isinstance(args, BaseModel) else dict(args)
        asked = replace(asked, shown=summary_of(spec, raw))  # as given, until it validates
        if spec.kind == "write" and not confirmed:
            unconfirmed = (
                f"{name!r} writes; a write tool runs only once a person confirmed the call "
                "(graphs.tools.writes: confirm_write asks, approved_write runs it)"
            )
            return self._refuse(asked, "permission_denied", unconfirmed)
        try:
            valid = spec.input.model_validate(raw)
        except ValidationError as error:
            return self._refuse(asked, "fix_arguments", *first_problem(error))
        asked = replace(asked, shown=summary_of(spec, valid))
        if spec.kind == "write":
            ran = self._ran(spec, asked.call_id)
            if ran is not None:
                return ran
        used = self._counts.get(name, 0)
        if spec.max_calls is not None and used >= spec.max_calls:
            limit = f"{name!r} may be called {spec.max_calls} times per attempt of {self.node!r}"
            return self._refuse(asked, "budget_exhausted", limit)
        if self.budget is not None and self.spent >= self.budget:
            spent = f"the task's tool-call budget is spent ({self.budget} left to this attempt)"
            return self._refuse(asked, "budget_exhausted", spent, "budget.max_tool_calls")
        self._counts[name] = used + 1
        self.spent += 1
        result = self._run(spec, self._code(spec), valid, replace(asked, began=time.perf_counter()))
        if spec.kind == "write" and result.error is None:
            self._record(result, asked.call_id)
        return result

    def _ran(self, spec: ToolSpec, call_id: str) -> ToolResult | None:
        """What a write call that ran did, from its record; None if it never ran."""
        if self.effects is None:
            raise MissingContext(
                f"node {self.node!r} calls write tool {spec.name!r} without a ledger to record "
                "it in: a write must be recorded to run at most once"
            )
        recorded = self.effects.tool_effect(self.env.step.thread_id, call_id)
        if recorded is None:
            return None
        effect = json.loads(recorded)
        receipt = ToolReceipt.model_validate(effect["receipt"])
        self.receipts.append(receipt)
        if self.on_receipt is not None:
            self.on_receipt(receipt)
        return ToolResult(receipt, output=spec.output.model_validate(effect["output"]))

    def _record(self, result: ToolResult, call_id: str) -> None:
        """Record, durably, what a write call did, before its caller learns it."""
        assert self.effects is not None  # _ran checked it
        output = None if result.output is None else result.output.model_dump(mode="json")
        effect = {"receipt": result.receipt.model_dump(mode="json"), "output": output}
        self.effects.record_tool_effect(self.env.step.thread_id, call_id, json.dumps(effect))

    def provide(self, name: str, code: ToolFn) -> None:
        """Give a declared tool its code for this attempt, once the agent has what it needs.

        A search can only run over an index of what was read; the agent builds the index,
        then provides the search. The declaration still decides everything else, so only
        a declared tool without code of its own may be given code.
        """
        spec = next((spec for spec in self.tools if spec.name == name), None)
        if spec is None:
            raise TypeError(
                f"node {self.node!r} does not declare tool {name!r}; it declares "
                f"{list(self.allowed)}"
            )
        if spec.run is not None:
            raise TypeError(f"tool {name!r} brings its own code; it cannot be given other code")
        self.code = {**self.code, name: code}

    def charged(self, usage: Usage) -> Usage:
        """``usage`` plus the tool calls that ran through this toolbox."""
        return Usage(tool_calls=usage.tool_calls + self.spent, tokens=usage.tokens)

    def _code(self, spec: ToolSpec) -> ToolFn:
        code = spec.run or self.code.get(spec.name)
        if code is None:
            raise MissingContext(
                f"node {self.node!r} declares tool {spec.name!r}, which brings no code of its "
                f"own, and the run context has none (RunContext.tools: {sorted(self.code)})"
            )
        return code

    def _run(self, spec: ToolSpec, code: ToolFn, valid: BaseModel, asked: Asked) -> ToolResult:
        try:
            output = within(spec, code, valid, self.env)
        except TimeoutError:
            message = f"{spec.name!r} did not answer within {spec.timeout_seconds} s"
            return self._failed(asked, "retryable", message)
        except Exception as error:
            code_of = next((c for t, c in spec.errors.items() if isinstance(error, t)), None)
            if code_of is None:
                raise
            return self._failed(asked, code_of, str(error))
        # An instance of a declared output that validates assignments (every contract does)
        # is valid as it stands; anything else (a dict, a subclass, a plain model) is checked.
        trusted = type(output) is spec.output and spec.output.model_config.get(
            "validate_assignment", False
        )
        checked = output if trusted else spec.output.model_validate(output)
        # The JSON is made only when something needs it: a corpus read's is its whole text.
        data = (
            b"" if spec.digest and spec.trim_bytes is None else checked.model_dump_json().encode()
        )
        digest = spec.digest(checked) if spec.digest else hashlib.sha256(data).hexdigest()
        ref = None
        if spec.trim_bytes is not None and len(data) > spec.trim_bytes:
            artifact = self.env.step.artifact_id(f"tool-{asked.call_id}")
            ref = self.env.store.put(artifact, "notes", data, "application/json")
        receipt = self._receipt(asked, cost=1, sha256=digest)
        return ToolResult(receipt, output=None if ref else checked, ref=ref)

    def _failed(self, asked: Asked, code: ToolErrorCode, message: str) -> ToolResult:
        """A call that ran and failed as its tool declares: charged, like any that ran."""
        return ToolResult(self._receipt(asked, cost=1, error=tool_error(code, message)))

    def _refuse(
        self, asked: Asked, code: ToolErrorCode, message: str, problem: str | None = None
    ) -> ToolResult:
        """A call that never ran: not charged."""
        return ToolResult(self._receipt(asked, cost=0, error=tool_error(code, message, problem)))

    def _receipt(
        self, asked: Asked, *, cost: int, sha256: str | None = None, error: ToolError | None = None
    ) -> ToolReceipt:
        receipt = ToolReceipt(
            tool=asked.tool,
            call_id=asked.call_id,
            input_summary=asked.shown[:500],
            output_sha256=sha256,
            provenance=self.env.step.provenance(),
            duration_ms=round((time.perf_counter() - asked.began) * 1000, 3),
            cost=cost,
            error=error,
        )
        self.receipts.append(receipt)
        if self.on_receipt is not None:
            self.on_receipt(receipt)
        traced = TRACED_ATTEMPT.get()
        if traced is not None:
            spec = next((spec for spec in self.tools if spec.name == asked.tool), None)
            traced.tool(receipt, spec.kind if spec else None)
        return receipt
