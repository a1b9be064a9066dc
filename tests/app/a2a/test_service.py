"""How deep a request body nests, counted before anything parses it (``app.a2a.service``)."""

from __future__ import annotations

import json

from app.a2a.service import MAX_JSON_DEPTH, json_depth


def test_depth_counts_arrays_and_objects_but_not_brackets_inside_strings() -> None:
    objective = '[{ "quoted \\" [ brackets" ' * 100
    body = json.dumps({"params": {"message": {"parts": [{"data": {"objective": objective}}]}}})
    assert json_depth(body.encode()) == 6 <= MAX_JSON_DEPTH
    assert json_depth(b"[" * 100_000 + b"]" * 100_000) == 100_000
    assert json_depth(b'"just a string"') == 0
