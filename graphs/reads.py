"""Which channels a node body reads, found in its source before the graph ever runs.

``call.read``/``call.require`` refuse a channel the node's input schema does not declare,
but only when the line runs: after earlier nodes spent time and budget. A body reads
state through nothing else, so its source says what it reads. The rule ``build_graph``
enforces on every use of the body's ``NodeCall`` parameter (``call`` below):

- ``call.read("x")`` / ``call.require("x")`` name the channel with a string literal;
- any other attribute is fine (``call.task``, ``call.step``, ``call.agent.run(...)``)
  except ``call.state`` and private ones, which would read state around the declaration;
- ``call`` handed to a Python function (``guard(call, ...)``) is followed: that function's
  source is read by the same rule, for the parameter ``call`` binds to.

Anything else (a channel name computed at run time, ``call`` stored, returned, or given
to something whose source cannot be read) is refused: its reads could not be known
before the run, so they could not be checked, and a check that guesses is a silent one.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from graphs.errors import WiringError

READERS = ("read", "require")
"""The ``NodeCall`` methods that read a channel."""
AROUND = ("state",)
"""``NodeCall`` attributes that reach state without naming a declared channel."""

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
FunctionDef = ast.FunctionDef | ast.AsyncFunctionDef


def body_reads(name: str, body: Callable[..., Any]) -> dict[str, str]:
    """Each channel node ``name``'s body reads (through helpers too), with where it does.

    Raises WiringError where the body uses its ``NodeCall`` in a way the rule above
    cannot follow.
    """
    function = inspect.unwrap(body)
    definition = _parsed(name, function)
    assert isinstance(function, types.FunctionType)  # _parsed reads functions only
    params = [*definition.args.posonlyargs, *definition.args.args]
    if not params:
        raise WiringError(f"node {name!r}: its body {_where(body)} takes no NodeCall parameter")
    found: dict[str, str] = {}
    for channel, where in _reads(name, function, params[0].arg, set()):
        found.setdefault(channel, where)
    return found


@dataclass(frozen=True)
class Use:
    """One use of the ``NodeCall`` parameter in a function's source, classified."""

    line: int
    """Line in the function's source, counted from its first line (a decorator's)."""
    channel: str | None = None
    """``call.read("x")``/``call.require("x")``: the channel read."""
    callee: ast.expr | None = None
    """``f(call)``: the expression naming the function the call is handed to."""
    bound: int | str = 0
    """Where ``call`` goes in that call: a position or a keyword."""
    refusal: str | None = None
    """Why this use cannot be checked before the run."""


def _reads(
    name: str, function: types.FunctionType, param: str, seen: set[tuple[object, str]]
) -> Iterator[tuple[str, str]]:
    """(channel, where) for every read of ``param`` in ``function`` and what it calls.

    Names are resolved on every build (a helper may be replaced); the source is parsed
    and classified once per function.
    """
    if (function, param) in seen:
        return
    seen.add((function, param))
    for use in _uses(name, function, param):
        where = _where(function, use.line)
        if use.refusal is not None:
            raise WiringError(f"node {name!r}: {where} {use.refusal}; {_RULE}")
        if use.channel is not None:
            yield use.channel, where
        elif use.callee is not None:
            callee = _callee(name, function, use.callee, where)
            yield from _reads(name, callee, _bound(name, callee, use.bound, where), seen)


_RULE = (
    'read channels with call.read("name") or call.require("name"), and pass call only to '
    "Python functions (see graphs/reads.py)"
)


def _uses(name: str, function: types.FunctionType, param: str) -> tuple[Use, ...]:
    """Every use of ``param`` in ``function``'s body (its decorators are not its body)."""
    return _classified(_parsed(name, function), param)


@cache
def _classified(definition: FunctionDef, param: str) -> tuple[Use, ...]:
    """The uses of ``param`` in ``definition``'s body, each classified (parsed once)."""
    parents: dict[ast.AST, ast.AST] = {
        child: parent for parent in ast.walk(definition) for child in ast.iter_child_nodes(parent)
    }
    local = _local_names(definition)
    uses = []
    for statement in definition.body:
        for found in ast.walk(statement):
            if isinstance(found, ast.Name) and found.id == param:
                uses.append(_classify(found, parents, param, local))
    return tuple(uses)


def _local_names(definition: FunctionDef) -> frozenset[str]:
    """Names the function binds itself: a call through one cannot be looked up at build."""
    names: set[str] = set()
    for found in ast.walk(definition):
        if isinstance(found, ast.Name) and not isinstance(found.ctx, ast.Load):
            names.add(found.id)
        elif isinstance(found, ast.arg):
            names.add(found.arg)
        elif isinstance(found, (*FUNCTION_DEFS, ast.ClassDef)) and found is not definition:
            names.add(found.name)
        elif isinstance(found, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in found.names)
    return frozenset(names)


def _classify(
    use: ast.Name, parents: dict[ast.AST, ast.AST], param: str, local: frozenset[str]
) -> Use:
    """What one occurrence of the parameter does: read, hand on, or something unchecked."""
    line = use.lineno
    parent = parents[use]
    grand = parents.get(parent)
    if not isinstance(use.ctx, ast.Load):
        return Use(line, refusal=f"rebinds {param!r}")
    if isinstance(parent, ast.Attribute):
        return _attribute(line, parent, grand, param)
    callee: ast.expr | None = None
    bound: int | str = 0
    if isinstance(parent, ast.Call) and use in parent.args:
        callee, bound = parent.func, parent.args.index(use)
    elif isinstance(parent, ast.keyword) and parent.arg and isinstance(grand, ast.Call):
        callee, bound = grand.func, parent.arg
    if callee is None:
        return Use(line, refusal=f"hands {param!r} on where its reads cannot be followed")
    root = callee
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Name) and root.id in local:
        return Use(
            line,
            refusal=f"hands {param!r} to {ast.unparse(callee)}, a name bound inside the "
            "function, which cannot be looked up before the run",
        )
    return Use(line, callee=callee, bound=bound)


def _attribute(line: int, attribute: ast.Attribute, parent: ast.AST | None, param: str) -> Use:
    """The channel of ``call.read("x")``; nothing for a harmless attribute; else a refusal."""
    used = f"{param}.{attribute.attr}"
    if attribute.attr in AROUND or attribute.attr.startswith("_"):
        return Use(line, refusal=f"uses {used}, which reads state around the declared inputs")
    if attribute.attr not in READERS:
        return Use(line)
    if not (isinstance(parent, ast.Call) and parent.func is attribute):
        return Use(line, refusal=f"takes {used} away instead of calling it")
    given = [*parent.args, *(keyword.value for keyword in parent.keywords)]
    if len(given) == 1 and isinstance(given[0], ast.Constant) and type(given[0].value) is str:
        return Use(line, channel=given[0].value)
    return Use(
        line,
        refusal=f"calls {used} without a literal channel name, so what it reads cannot be "
        "checked before the run",
    )


def _callee(
    name: str, function: types.FunctionType, expression: ast.expr, where: str
) -> types.FunctionType:
    """The Python function an expression names, looked up as ``function`` sees names."""
    found = _lookup(function, expression)
    found = inspect.unwrap(found) if callable(found) else found
    if not isinstance(found, types.FunctionType):
        raise WiringError(
            f"node {name!r}: {where} passes the NodeCall to {ast.unparse(expression)}, which is "
            f"not a Python function whose source can be read; {_RULE}"
        )
    return found


def _lookup(function: types.FunctionType, expression: ast.expr) -> object:
    """A name or dotted name as ``function`` resolves it (closure, globals, builtins)."""
    if isinstance(expression, ast.Attribute):
        owner = _lookup(function, expression.value)
        if isinstance(owner, (types.ModuleType, type)):
            return getattr(owner, expression.attr, None)
        return None
    if not isinstance(expression, ast.Name):
        return None
    cells = dict(zip(function.__code__.co_freevars, function.__closure__ or (), strict=True))
    if expression.id in cells:
        try:
            return cells[expression.id].cell_contents
        except ValueError:  # an empty cell: not bound yet
            return None
    if expression.id in function.__globals__:
        return function.__globals__[expression.id]
    return getattr(builtins, expression.id, None)


def _bound(name: str, callee: types.FunctionType, position: int | str, where: str) -> str:
    """The parameter of ``callee`` that a positional index or keyword binds to."""
    arguments = _parsed(name, callee).args
    positional = [*arguments.posonlyargs, *arguments.args]
    if isinstance(position, int) and position < len(positional):
        return positional[position].arg
    named = [*arguments.args, *arguments.kwonlyargs]
    if isinstance(position, str) and position in {arg.arg for arg in named}:
        return position
    raise WiringError(
        f"node {name!r}: {where} passes the NodeCall to {callee.__qualname__} through "
        f"*args or **kwargs; {_RULE}"
    )


_PARSING = threading.Lock()
"""One parse at a time: CPython 3.11's ``ast`` is not safe for two threads parsing at once
(``SystemError: AST constructor recursion depth mismatch``), and two Workflows opened side
by side build, and so check, their graphs at once."""


@cache
def definition_of(function: types.FunctionType) -> FunctionDef | None:
    """The function's definition, parsed from its source (None when it has none)."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    try:
        with _PARSING:
            tree = ast.parse(source)
    except SyntaxError:  # a lambda's line, cut out of a larger expression
        return None
    first = tree.body[0] if tree.body else None
    return first if isinstance(first, FunctionDef) else None


def _parsed(name: str, function: Callable[..., Any]) -> FunctionDef:
    """``function``'s definition, or WiringError: a body nobody can read is not checked."""
    definition = definition_of(function) if isinstance(function, types.FunctionType) else None
    if definition is None:
        raise WiringError(
            f"node {name!r}: the source of {_where(function)} cannot be read, so what it "
            "reads cannot be checked; define the body (and helpers it passes call to) with "
            "def in a module"
        )
    return definition


def _where(function: Callable[..., Any], line: int = 1) -> str:
    """``module.qualname, line N`` of a line of ``function`` (counted in its file)."""
    code = getattr(function, "__code__", None)
    first = code.co_firstlineno if code is not None else 1
    module = getattr(function, "__module__", "?")
    return f"{module}.{getattr(function, '__qualname__', function)!s} (line {first + line - 1})"
