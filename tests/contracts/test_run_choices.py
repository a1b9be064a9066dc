"""A run choice is a task field chosen per run: its bounds and description are the field's."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.server.graph import ServerContext
from contracts import Budget, Policies, RunChoices


@pytest.mark.parametrize("choices", [RunChoices, ServerContext])
def test_each_choice_has_the_bounds_and_description_of_its_task_field(
    choices: type[RunChoices],
) -> None:
    for name in RunChoices.model_fields:
        owner = Policies if name in Policies.model_fields else Budget
        own = owner.model_fields[name]
        chosen = choices.model_fields[name]
        assert chosen.default is None, f"{name}: unset means the task's own value"
        assert (chosen.description, chosen.metadata) == (own.description, own.metadata), name
    limit = Budget.model_fields["max_review_rounds"].metadata
    too_many = next(bound.le for bound in limit if hasattr(bound, "le")) + 1
    with pytest.raises(ValidationError, match="max_review_rounds"):
        choices.model_validate({"max_review_rounds": too_many})


def test_a_choice_that_is_no_task_field_fails_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match=r"run choices \['colour'\] are no field"):

        class Colourful(RunChoices):
            colour: str | None = None


def test_the_server_s_models_are_no_task_choice() -> None:
    context = ServerContext.model_validate({"agent_models": {"writer": "offline"}})
    assert context.choices() is None
    chosen = ServerContext.model_validate({"require_approval": True}).choices()
    assert chosen == RunChoices(require_approval=True)
