"""The branch results channel merges parallel writes: one result per branch, the latest."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from contracts import BranchResult, BranchResults, Handoff
from tests.contracts.examples import EXAMPLES


def result(key: str, input_hash: str, node: str = "research") -> BranchResult:
    return BranchResult(
        node=node, key=key, input_hash=input_hash, handoff=EXAMPLES[Handoff], summary=key
    )


def test_writes_of_parallel_branches_are_all_kept_in_node_and_key_order() -> None:
    merged = BranchResults.merged(None, BranchResults(results=[result("q-2", "b")]))
    merged = BranchResults.merged(merged, BranchResults(results=[result("q-1", "a")]))
    merged = BranchResults.merged(merged, BranchResults(results=[result("q-1", "x", "check")]))
    assert merged is not None
    assert [(r.node, r.key) for r in merged.results] == [
        ("check", "q-1"),
        ("research", "q-1"),
        ("research", "q-2"),
    ]
    assert set(merged.of("research")) == {"q-1", "q-2"}


def test_a_later_pass_of_a_branch_replaces_its_earlier_result_only() -> None:
    first = BranchResults(results=[result("q-1", "a"), result("q-2", "b")])
    again = BranchResults.merged(first, BranchResults(results=[result("q-2", "c")]))
    assert again is not None
    assert {key: r.input_hash for key, r in again.of("research").items()} == {
        "q-1": "a",
        "q-2": "c",
    }


def test_merging_accepts_the_plain_dicts_a_server_hands_over() -> None:
    first = BranchResults(results=[result("q-1", "a")]).model_dump(mode="json")
    merged = BranchResults.merged(first, BranchResults(results=[result("q-2", "b")]).model_dump())
    assert merged is not None and list(merged.of("research")) == ["q-1", "q-2"]
    assert BranchResults.merged(first, None) == BranchResults.model_validate(first)


def test_two_results_of_one_branch_in_one_value_are_refused() -> None:
    with pytest.raises(ValidationError, match="one per"):
        BranchResults(results=[result("q-1", "a"), result("q-1", "b")])
