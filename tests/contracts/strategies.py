"""Hypothesis strategies of valid contracts, derived from each contract's fields and examples.

Nothing here names a top-level contract, so a new one needs no edit: each field's strategy
comes from its type and constraints (``Literal``, enums, bounds, lengths, patterns, nested
models, optionals, lists, dicts), and an instance is validated by the contract itself.
Rules that relate several fields (a URI built from kind and id, a span as long as its
quote, facts citing the bundle's sources) are beyond field types: ``RELATIONS`` fixes
drawn payloads of the few parts that have such rules, wherever they appear; and a drawn
value that still breaks a rule of the contract gives way to the value of one of its
``EXAMPLES``, so every draw is valid and no draw is filtered away.

Texts are kept short (the properties are about shape, not size) and time zones are whole-minute
offsets, because JSON serialization drops the seconds of an offset.
"""

from __future__ import annotations

import re
import types
import typing
import zlib
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from enum import Enum
from functools import cache
from typing import Any, Literal, get_args, get_origin

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel, JsonValue, ValidationError
from pydantic.fields import FieldInfo

from contracts import VersionedContract, registered
from contracts.artifacts import ArtifactRef
from contracts.research import Fact, LineRange, ResearchBundle, Span
from contracts.task import Constraints
from tests.contracts.examples import valid_examples

Payload = dict[str, Any]
"""A contract's data as drawn, before the contract validates it."""

SHORT = 40
"""Longest text drawn for any string field (all limits are higher)."""
FEW = 3
"""Most items drawn for any list or dict."""

whole_minute_offsets = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
aware_datetimes = st.datetimes(
    # a day inside datetime's range, so every offset still converts to UTC
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=whole_minute_offsets,
)
"""Contracts refuse naive datetimes, so every datetime field draws aware ones."""


def _bounds(metadata: list[Any]) -> dict[str, Any]:
    """The constraints pydantic keeps as field metadata, by kind."""
    found: dict[str, Any] = {"patterns": []}
    for item in metadata:
        if isinstance(item, FieldInfo):
            nested = _bounds(item.metadata)
            found["patterns"] += nested.pop("patterns")
            found.update(nested)
        elif isinstance(item, annotated_types.Ge):
            found["min_value"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            found["min_value"] = item.gt + 1 if isinstance(item.gt, int) else item.gt
            found["exclude_min"] = not isinstance(item.gt, int)
        elif isinstance(item, annotated_types.Le):
            found["max_value"] = item.le
        elif isinstance(item, annotated_types.Lt):
            found["max_value"] = item.lt - 1 if isinstance(item.lt, int) else item.lt
            found["exclude_max"] = not isinstance(item.lt, int)
        elif isinstance(item, annotated_types.MinLen):
            found["min_size"] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            found["max_size"] = item.max_length
        elif getattr(item, "pattern", None) is not None:
            found["patterns"].append(item.pattern)
    return found


_ATOM = re.compile(
    r"(?:\[(?P<chars>[^\]\\^][^\]\\]*)\]|(?P<literal>[A-Za-z0-9_@:/-]))"
    r"(?P<repeat>[*+?]|\{\d+(?:,\d*)?\})?"
)
"""One atom of a simple pattern: a character class or a literal, with an optional repeat."""


def _class_alphabet(chars: str) -> str:
    """The characters a class such as ``A-Za-z0-9._-`` stands for."""
    alphabet, index = [], 0
    while index < len(chars):
        if index + 2 < len(chars) and chars[index + 1] == "-":
            first, last = ord(chars[index]), ord(chars[index + 2])
            alphabet += [chr(code) for code in range(first, last + 1)]
            index += 3
        else:
            alphabet.append(chars[index])
            index += 1
    return "".join(alphabet)


def _simple_pattern(pattern: str) -> st.SearchStrategy[str] | None:
    """Strings of an anchored pattern made only of classes and literals, drawn a run at a time.

    ``from_regex`` draws such strings one character at a time, which made a sha256 field
    cost more than the rest of its contract; None for any other pattern.
    """
    if not (pattern.startswith("^") and pattern.endswith("$")):
        return None
    body, parts, position = pattern[1:-1], [], 0
    while position < len(body):
        atom = _ATOM.match(body, position)
        if atom is None:
            return None
        position = atom.end()
        if atom["literal"] and not atom["repeat"]:
            parts.append(st.just(atom["literal"]))
            continue
        alphabet = _class_alphabet(atom["chars"]) if atom["chars"] else atom["literal"]
        repeat = atom["repeat"] or "{1}"
        low, high = {"*": (0, SHORT), "+": (1, SHORT), "?": (0, 1)}.get(repeat, (None, None))
        if low is None:
            counts = repeat.strip("{}").split(",")
            low = int(counts[0])
            high = low if len(counts) == 1 else int(counts[1]) if counts[1] else low + SHORT
        parts.append(st.text(alphabet, min_size=low, max_size=high))
    return st.tuples(*parts).map("".join)


def _strings(bounds: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = bounds.get("min_size", 0), bounds.get("max_size")
    patterns: list[str] = bounds["patterns"]
    if not patterns:
        return st.text(min_size=low, max_size=min(high or SHORT, max(low, SHORT)))
    first, *others = patterns
    simple = _simple_pattern(first)
    drawn = st.from_regex(first, fullmatch=True) if simple is None else simple
    return drawn.filter(
        lambda text: (
            low <= len(text) <= (high or len(text))
            and all(re.fullmatch(pattern, text) for pattern in others)
        )
    )


def for_annotation(annotation: Any, metadata: list[Any]) -> st.SearchStrategy[Any]:
    """Values of one annotated type, within the bounds its metadata sets."""
    if annotation is JsonValue:  # free-form JSON (a pause's own details)
        return json_values()
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = get_args(annotation)
        return for_annotation(base, [*metadata, *extra])
    bounds = _bounds(metadata)
    if origin is Literal:
        return st.sampled_from(get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(for_annotation(arm, metadata) for arm in get_args(annotation)))
    if annotation is type(None):
        return st.none()
    if origin is list:
        (item,) = get_args(annotation)
        low = bounds.get("min_size", 0)
        return st.lists(
            for_annotation(item, []),
            min_size=low,
            max_size=max(low, min(FEW, bounds.get("max_size", FEW))),
        )
    if origin is dict:
        key, value = get_args(annotation)
        return st.dictionaries(for_annotation(key, []), for_annotation(value, []), max_size=FEW)
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return st.sampled_from(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return payloads(annotation)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(bounds.get("min_value"), bounds.get("max_value"))
    if annotation is float:
        return st.floats(
            bounds.get("min_value"),
            bounds.get("max_value"),
            exclude_min=bounds.get("exclude_min", False),
            exclude_max=bounds.get("exclude_max", False),
            allow_nan=False,
            allow_infinity=False,
        )
    if annotation is str:
        return _strings(bounds)
    if annotation is datetime:
        return aware_datetimes
    return st.from_type(annotation)


def for_field(model: type[BaseModel], name: str) -> st.SearchStrategy[Any]:
    """Values of one field; a contract's ``schema_version`` is its current version."""
    if name == "schema_version" and issubclass(model, VersionedContract):
        return st.just(model.VERSION)
    field = model.model_fields[name]
    return for_annotation(field.annotation, list(field.metadata))


def _uri_names_kind_and_id(ref: Payload) -> Payload:
    return {**ref, "uri": f"artifact://{ref['kind']}/{ref['artifact_id']}"}


def _span_after_start(span: Payload) -> Payload:
    return {**span, "end": max(span["end"], span["start"] + 1)}


def _last_line_after_first(lines: Payload) -> Payload:
    return {**lines, "last": max(lines["last"], lines["first"])}


def _span_as_long_as_quote(fact: Payload) -> Payload:
    start = fact["span"]["start"]
    return {**fact, "span": {"start": start, "end": start + len(fact["quote"])}}


def _one_line_titles(constraints: Payload) -> Payload:
    titles = [" ".join(title.split())[:120] for title in constraints["required_sections"]]
    return {**constraints, "required_sections": [title for title in titles if title]}


def _number(identifier: str) -> int:
    """A stable number for any drawn id, to pick one of the bundle's own ids by."""
    return zlib.crc32(identifier.encode("utf-8", "surrogatepass"))


def _facts_cite_the_bundle(bundle: Payload) -> Payload:
    """Unique sources and facts; every cited source, and every fact leaned on, is in the bundle.

    Drawn ids are mapped onto the bundle's own by their number, so citations stay varied.
    """
    sources = list({source["id"]: source for source in bundle["sources"]}.values())
    ids = [source["id"] for source in sources]
    facts = list({fact["id"]: fact for fact in bundle["facts"]}.values()) if ids else []
    claims = [fact["id"] for fact in facts]

    def cite(source_id: str) -> str:
        return ids[_number(source_id) % len(ids)]

    def lean(claim_id: str | None) -> str | None:
        return None if claim_id is None else claims[_number(claim_id) % len(claims)]

    facts = [
        {
            **fact,
            "source_id": cite(fact["source_id"]),
            "corroborating_source_ids": [cite(c) for c in fact["corroborating_source_ids"]],
            "leans_on": lean(fact["leans_on"]),
        }
        for fact in facts
    ]
    return {**bundle, "sources": sources, "facts": facts}


RELATIONS: dict[type[BaseModel], Callable[[Payload], Payload]] = {
    ArtifactRef: _uri_names_kind_and_id,
    Span: _span_after_start,
    LineRange: _last_line_after_first,
    Fact: _span_as_long_as_quote,
    Constraints: _one_line_titles,
    ResearchBundle: _facts_cite_the_bundle,
}
"""Rules between fields that field types cannot state, as fixes of a drawn payload (keyed by
the part that has the rule, so they hold wherever it is nested). Optional: a contract
without an entry still gets valid instances (see ``instances``)."""


@cache
def payloads(model: type[BaseModel]) -> st.SearchStrategy[Payload]:
    """Unvalidated payloads of a model: every field drawn from its type, nested parts too."""
    drawn = st.fixed_dictionaries({name: for_field(model, name) for name in model.model_fields})
    relation = RELATIONS.get(model)
    return drawn.map(relation) if relation else drawn


@cache
def _bases(model: type[VersionedContract]) -> tuple[VersionedContract, ...]:
    return tuple(valid_examples(model))


@st.composite
def _instances(draw: st.DrawFn, model: type[VersionedContract]) -> VersionedContract:
    values = draw(payloads(model))
    try:
        return model.model_validate(values)
    except ValidationError:
        pass
    bases = _bases(model)
    if not bases:
        raise AssertionError(f"{model.__name__} has no valid example to draw from")
    base = draw(st.sampled_from(bases))
    current: Payload = {name: getattr(base, name) for name in model.model_fields}
    for name in draw(st.permutations(sorted(values))):
        trial = {**current, name: values[name]}
        try:
            model.model_validate(trial)
        except ValidationError:
            continue
        current = trial
    return model.model_validate(current)


def instances(model: type[VersionedContract]) -> st.SearchStrategy[VersionedContract]:
    """Valid instances of a contract.

    A payload drawn from the fields is used as is when the contract accepts it. Otherwise
    one of the contract's examples is the start, and each drawn field value replaces the
    example's in turn unless the contract refuses it, so a rule this module does not know
    keeps the example's value for the fields it ties, and every other field still varies.
    """
    return _instances(model)


STRATEGIES: dict[type[VersionedContract], st.SearchStrategy[Any]] = {
    model: instances(model) for model in registered()
}
"""A strategy of valid instances for every registered contract."""


def json_values(allow_non_finite: bool = False) -> st.SearchStrategy[Any]:
    """Arbitrary JSON-like values: null, booleans, numbers and text, nested in lists and dicts."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=allow_non_finite, allow_infinity=allow_non_finite)
        | st.text()
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=10), children, max_size=4)
        ),
        max_leaves=12,
    )


__all__ = ["RELATIONS", "STRATEGIES", "for_annotation", "instances", "json_values", "payloads"]
