"""A node put before another: ``detour`` derives the router, ``rerouted`` the wiring."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

import pytest

from graphs import WIRING
from graphs.errors import WiringError
from graphs.nodes.writer import writer
from graphs.routing import detour
from graphs.wiring import rerouted, targets
from tests.extension_span_check import check_spans
from tests.placing import drafts_to_review, router


def pick(state: Mapping[str, Any]) -> Literal["reviewer", "conclude"]:
    return state["to"]  # type: ignore[no-any-return]


def test_a_detour_goes_through_the_new_node_where_the_router_went_to_the_old_one() -> None:
    routed = detour(pick, "reviewer", via="claim_check")
    assert (routed({"to": "reviewer"}), routed({"to": "conclude"})) == ("claim_check", "conclude")
    assert set(targets(routed)) == {"claim_check", "conclude"}
    side = detour(pick, "reviewer", via=("check_spans", "measure_draft"))
    assert side({"to": "reviewer"}) == ("check_spans", "measure_draft")
    assert set(targets(side)) == {"check_spans", "measure_draft", "conclude"}


def test_a_detour_names_exactly_where_the_project_s_router_can_go() -> None:
    spec = drafts_to_review(WIRING)[0]
    route = router(spec, next(route for node, route in WIRING if node.name == spec.name))
    routed = detour(route, "reviewer", via="claim_check")
    expected = {*targets(route)} - {"reviewer"} | {"claim_check"}
    assert set(targets(routed)) == expected
    assert routed.__name__ == f"{route.__name__}_via_claim_check"


def test_a_detour_from_a_target_the_router_never_takes_is_refused() -> None:
    with pytest.raises(TypeError, match="never goes to 'finalize'"):
        detour(pick, "finalize", via="claim_check")


def test_rerouting_a_node_the_wiring_lacks_is_refused() -> None:
    unwired = replace(check_spans, name="wired_nowhere")
    with pytest.raises(WiringError, match="'wired_nowhere' is not in the wiring"):
        rerouted(WIRING, unwired, pick)
    wiring = rerouted(WIRING, writer, pick)
    assert [route for spec, route in wiring if spec.name == writer.name] == [pick]
    assert len(wiring) == len(WIRING)
