"""A message naming a corpus no file is behind is refused as invalid params, naming the path.

``plan_for`` admits a task through the same corpus rules as ``handoff run``: a symlink loop
and a missing folder are the sender's to correct (invalid params, never an internal error),
and nothing is saved.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from a2a.helpers.proto_helpers import new_data_part
from a2a.types import Message, Role
from a2a.utils.errors import InvalidParamsError

from app.a2a.plans import plan_for
from app.workflow import Workflow
from tests.conftest import OBJECTIVE


def _corpus(case: str, folder: Path) -> tuple[Path, str]:
    """The corpus path for one case, and what its refusal says about it."""
    if case == "loop_in_folder":
        corpus = folder / "corpus"
        corpus.mkdir()
        (corpus / "a.md").symlink_to(corpus / "b.md")
        (corpus / "b.md").symlink_to(corpus / "a.md")
        return corpus, ".md is a symlink loop"
    if case == "link_to_itself":
        (folder / "self.md").symlink_to(folder / "self.md")
        return folder / "self.md", "is a symlink loop"
    return folder / "absent", "does not exist"


@pytest.mark.parametrize("case", ["loop_in_folder", "link_to_itself", "missing"])
def test_a_corpus_with_no_file_behind_it_is_invalid_params_naming_the_path(
    workflow: Workflow, tmp_path: Path, case: str
) -> None:
    corpus, says = _corpus(case, tmp_path)
    sent = Message(
        message_id="m-1",
        role=Role.ROLE_USER,
        parts=[new_data_part({"objective": OBJECTIVE, "corpus": [str(corpus)]})],
    )
    with pytest.raises(InvalidParamsError) as refused:
        plan_for(workflow, sent, running=False)
    assert str(corpus) in refused.value.message and says in refused.value.message
    assert "\n" not in refused.value.message
    assert workflow.threads() == [], "nothing was saved"
