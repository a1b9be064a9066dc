"""What identifies a node's work: its declared inputs, and the code that does the work.

Two visits with equal hashes would produce equal results, so a finished attempt's result
may be reused (after a crash between the node's end and its checkpoint). The hash covers
the channels the node declares it reads (not a hand-kept copy of them), the part of the
task its work depends on (``task_view``: not the task version, so work a revision leaves
valid is reused), the contract versions of what it reads and writes, the source of
the node's module and of its agent's implementation (after an upgrade, nothing the old
code produced is reused), and the chat model an agent works with (``model_identity``:
the same agent around another model does the work again).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Collection, Hashable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from contracts import BranchTask, TaskSpec
from graphs.boundary import validate_as
from graphs.declare import NodeSpec, sent, whole_task

if TYPE_CHECKING:
    from graphs.context import RunContext


@cache
def _source_digest(path: str) -> str:
    """The file's sha256; ``unread`` for code with no file to read (a REPL's, ``python -``).

    Such code changes only with its process, so its name alone stands for it.
    """
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unread"


def code_version(*objects: object) -> str:
    """A digest of the source files that define these objects (their classes for instances).

    A compiled graph run as a body (``graphs.declare.subgraph_body``) is the code of its
    nodes' functions.
    """
    found: list[object] = []
    for obj in objects:
        graph = getattr(obj, "subgraph", None)
        builder = getattr(graph, "builder", None)
        if builder is None:
            found.append(obj)
            continue
        for spec in getattr(builder, "nodes", {}).values():
            found.append(getattr(spec.runnable, "func", None) or spec.runnable)
    targets = (
        obj if inspect.isclass(obj) or inspect.isroutine(obj) else type(obj) for obj in found
    )
    return "|".join(_code_part(cast(Hashable, target)) for target in targets)


@cache
def _code_part(target: Hashable) -> str:
    """``module.name:digest`` of one class or function (its source is read once a process)."""
    try:
        source = inspect.getsourcefile(target)  # type: ignore[arg-type]
    except TypeError:
        source = None
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"
    return f"{name}:{_source_digest(source) if source else 'builtin'}"


def model_identity(agent: object) -> Any:
    """What an agent's work depends on beyond its code: its description and its models.

    The same agent class around another chat model (another name, another model id, other
    parameters) does other work: its ``describe()`` and each chat model it holds (itself,
    or a field of it, bound or not) by class, name, provider type and LangChain's
    identifying parameters. None for an agent that names neither.
    """
    describe = getattr(agent, "describe", None)
    models = [_model_part(model) for model in _models_in(agent)]
    if not callable(describe) and not models:
        return None
    return {"agent": str(describe()) if callable(describe) else None, "models": models}


def _is_model(value: object) -> bool:
    """Whether ``value`` is a LangChain language model (duck-typed: graphs needs no import)."""
    return hasattr(type(value), "_llm_type") and hasattr(type(value), "_identifying_params")


def _models_in(agent: object) -> list[object]:
    """The chat models an agent is, or holds in a field (a model bound to tools included)."""
    found = [agent] if _is_model(agent) else []
    fields = vars(agent) if hasattr(agent, "__dict__") else {}
    for value in fields.values():
        for candidate in (value, getattr(value, "bound", None)):
            if _is_model(candidate) and candidate not in found:
                found.append(candidate)
                break
    return found


def _model_part(model: Any) -> dict[str, Any]:
    """One chat model's identity: class, name, provider type and identifying parameters."""
    kind = type(model)
    return {
        "class": f"{kind.__module__}.{kind.__qualname__}",
        "name": getattr(model, "name", None),
        "type": str(model._llm_type),
        "params": model._identifying_params,
    }


def contract_versions(spec: NodeSpec) -> dict[str, str]:
    """The schema version of each contract the node reads or writes."""
    versions = {}
    for name, channel in {**spec.inputs, **spec.outputs}.items():
        field = channel.contract.model_fields.get("schema_version")
        versions[name] = str(field.default if field else "")
    return versions


def input_hash(spec: NodeSpec, state: Mapping[str, Any], ctx: RunContext, task: TaskSpec) -> str:
    """Equal hash, equal work: inputs, the task's view, contracts and code of this node."""
    return hash_of(input_digests(spec, state, ctx, task))


def hash_of(digests: Mapping[str, str]) -> str:
    """The input hash of these per-input digests (``input_digests``)."""
    return hashlib.sha256(json.dumps(dict(sorted(digests.items()))).encode()).hexdigest()


def input_digests(
    spec: NodeSpec, state: Mapping[str, Any], ctx: RunContext, task: TaskSpec
) -> dict[str, str]:
    """A digest per input: the task (its view), its code, each channel it reads, ...

    Also the node, what it reads outside state (``fingerprint``) and its contracts. The
    audit keeps them (``NodeRun.inputs``), so a pass can say which changed.
    """
    agent = ctx.agent_for(spec) if spec.agent is not None else None
    payload: dict[str, Any] = {
        "node": spec.name,
        "task": task_view(spec, task, state),
        "fingerprint": spec.fingerprint(agent, task) if spec.fingerprint else "",
        "contracts": contract_versions(spec),
        "code": code_version(spec.body, *([agent] if agent is not None else [])),
    }
    model = model_identity(agent) if agent is not None else None
    if model is not None:  # an agent that names no model hashes as it did before
        payload["model"] = model
    digests = {
        name: _digest(json.dumps(value, sort_keys=True, default=str, separators=(",", ":")))
        for name, value in payload.items()
    }
    digests.update({channel: _digest(part) for channel, part in input_parts(spec, state)})
    return digests


def _digest(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def input_parts(spec: NodeSpec, state: Mapping[str, Any]) -> list[tuple[str, bytes]]:
    """Each declared input but the task (its view is hashed instead), as canonical bytes."""
    return [
        (channel, _canonical(spec, channel, state.get(channel)))
        for channel in sorted(spec.inputs)
        if channel != "task"
    ]


def task_view(spec: NodeSpec, task: TaskSpec, state: Mapping[str, Any]) -> Any:
    """What of the task the node's work depends on: its declared view, else the whole task.

    Not the task version: a revision that leaves a node's view alone leaves its result
    valid, and the node reuses it (``graphs.node_runner.reuse``). A branch's view may
    depend on its key (research's: its own question only).
    """
    if spec.task_view is None:
        return whole_task(task, None)
    if spec.branch is None:  # only a branch task is handed a ``branch``
        return spec.task_view(task, None)
    branch = state.get("branch")
    key = None if branch is None else validate_as(spec.name, "branch", branch, BranchTask).key
    return spec.task_view(task, key)


def _canonical(spec: NodeSpec, channel: str, value: Any) -> bytes:
    """An input as its contract's JSON, whether state holds the model or a plain dict.

    The dev server hands nodes dicts where a Python caller's state holds models; both
    give the same bytes, so a node reuses a result whichever host recorded it. Fields come
    in declaration order (no contract has a free-form dict field), so equal values give
    equal bytes.
    """
    if value is None:
        return b"null"
    declared = spec.inputs[channel]
    if declared.many:
        items = validate_as(spec.name, channel, value, declared.contract, many=True)
        return b"[" + b",".join(work_json(item) for item in items) + b"]"
    model = value if isinstance(value, BaseModel) else None
    if model is None:
        model = validate_as(spec.name, channel, value, declared.contract)
        assert isinstance(model, BaseModel)
    if channel == "branch" and spec.branch is sent:  # its payload is the work, not its place
        return work_json(model, {"key", "nodes"})
    return work_json(model)


def work_json(model: BaseModel, besides: Collection[str] = ()) -> bytes:
    """A contract's JSON without what it declares is not work (``NOT_WORK``), nor ``besides``.

    A task a Send or a list of names started is keyed by its place in the router's list,
    and knows which nodes started beside it: neither changes its work, so a map whose
    parts move, or a node that runs alone then beside another, reuses what it did.
    """
    left_out = set(getattr(model, "NOT_WORK", ())) | set(besides)
    return model.model_dump_json(exclude=left_out).encode()
