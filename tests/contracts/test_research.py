"""A fact may carry the code example its sentence introduces; older bundles still load."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from contracts import CodeExample, ResearchBundle

EXAMPLE: dict[str, Any] = {
    "text": "```bash\npip install tool\n```",
    "span": {"start": 40, "end": 68},
    "lines": {"first": 5, "last": 7},
    "code": "pip install tool",
    "media_type": "text/x-shellscript",
}


def _bundle_data() -> dict[str, Any]:
    return ResearchBundle.model_validate(ResearchBundle.EXAMPLES[0]).model_dump(mode="json")


def test_an_example_shows_its_code_else_its_verbatim_text() -> None:
    example = CodeExample.model_validate(EXAMPLE)
    assert example.shown == "pip install tool"
    plain = CodeExample.model_validate(
        {**EXAMPLE, "text": "pip install tool", "span": {"start": 40, "end": 56}, "code": None}
    )
    assert plain.shown == "pip install tool"


def test_an_example_whose_span_does_not_fit_its_text_is_refused() -> None:
    with pytest.raises(ValidationError, match="span length 10 differs from example text length 28"):
        CodeExample.model_validate({**EXAMPLE, "span": {"start": 40, "end": 50}})


def test_a_fact_carries_its_example_through_a_bundle() -> None:
    data = _bundle_data()
    data["facts"][0]["example"] = EXAMPLE
    bundle = ResearchBundle.model_validate(data)
    assert bundle.facts[0].example == CodeExample.model_validate(EXAMPLE)


def test_a_bundle_stored_at_1_1_loads_with_facts_that_carry_no_example() -> None:
    data = _bundle_data()
    data["schema_version"] = "1.1"
    for fact in data["facts"]:
        del fact["example"]
    bundle = ResearchBundle.model_validate(data)
    assert bundle.schema_version == "1.2"
    assert [fact.example for fact in bundle.facts] == [None]
