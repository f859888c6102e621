"""Relevance in packs (issue 35): the floor, ``maxItems`` in greedy packing, request
validation, the NDJSON/MCP body fields, the footer's ``omitted`` on the wire, replay conditions."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from cairn.app.core.errors import BadInput
from cairn.app.packs.relevance import floor_note, relevance_floor
from cairn.app.packs.replay_codec import decode_record, encode_record, replay_conditions
from cairn.app.packs.serialize import event_json, footer_fields, request_from_json
from cairn.app.packs.types import Omitted, PackFooter, PackHeader, PackRequest, validate_pack_request
from cairn.retrieval.fusion import Fused
from cairn.retrieval.packing import pack_greedy

FUSED = [Fused("p1", 4.0), Fused("p2", 1.2), Fused("p3", 1.0), Fused("p4", 0.5)]


def test_floor_keeps_candidates_at_or_above_the_share_of_the_best():
    f = relevance_floor(FUSED, min_relative_score=0.25)
    assert [x.id for x in f.kept] == ["p1", "p2", "p3"]  # 1.0 == 0.25 × 4.0 stays
    assert (f.below, f.bar) == (1, 1.0)
    assert floor_note(f, 0.25, 4.0) == (
        "relevance floor: 1 candidates scored under 1 (minRelativeScore 0.25 × the best score 4) and were left out"
    )


def test_no_floor_keeps_everything_and_a_floor_of_one_keeps_the_best():
    assert relevance_floor(FUSED, min_relative_score=None).kept == FUSED
    assert relevance_floor(FUSED, min_relative_score=None).below == 0
    assert [x.id for x in relevance_floor(FUSED, min_relative_score=1.0).kept] == ["p1"]
    assert relevance_floor([], min_relative_score=0.5).kept == []


def test_greedy_packing_stops_at_max_items_and_reports_the_rest_apart_from_the_skipped():
    r = pack_greedy([5, 50, 5, 5, 5], tokens=int, max_tokens=20, max_items=2)
    assert (r.included, r.skipped, r.over_count) == ([5, 5], [50], [5, 5])
    assert pack_greedy([5, 5], tokens=int, max_tokens=20, max_items=3).over_count == []
    with pytest.raises(ValueError, match="max_items"):
        pack_greedy([5], tokens=int, max_tokens=20, max_items=0)


@pytest.mark.parametrize(
    ("kwargs", "field", "limit"),
    [
        ({"max_items": 0}, "input.budget.maxItems", "1-200"),
        ({"max_items": 201}, "input.budget.maxItems", "1-200"),
        ({"min_relative_score": 0.0}, "input.relevance.minRelativeScore", "(0, 1]"),
        ({"min_relative_score": 1.01}, "input.relevance.minRelativeScore", "(0, 1]"),
        ({"min_relative_score": math.nan}, "input.relevance.minRelativeScore", "(0, 1]"),
        ({"min_relative_score": math.inf}, "input.relevance.minRelativeScore", "(0, 1]"),
    ],
)
def test_validation_names_the_field_and_the_limit(kwargs, field, limit):
    with pytest.raises(BadInput) as e:
        validate_pack_request(PackRequest(task="t", **kwargs))
    assert e.value.extra == {"field": field, "limit": limit}
    assert field in str(e.value)


def test_limits_at_their_edges_are_accepted():
    validate_pack_request(PackRequest(task="t", max_items=1, min_relative_score=1.0))
    validate_pack_request(PackRequest(task="t", max_items=200, min_relative_score=1e-9))


def test_ndjson_and_mcp_body_carries_the_fields():
    req = request_from_json({"task": "t", "budget": {"maxItems": 5}, "relevance": {"minRelativeScore": 1}})
    assert (req.max_items, req.min_relative_score) == (5, 1.0)
    req = request_from_json({"task": "t", "budget": {"maxItems": None}, "relevance": None})
    assert (req.max_items, req.min_relative_score) == (None, None)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"task": "t", "budget": {"maxItems": "5"}}, "input.budget.maxItems"),
        ({"task": "t", "budget": {"maxItems": 2.5}}, "input.budget.maxItems"),
        ({"task": "t", "budget": {"maxItems": 0}}, "input.budget.maxItems"),
        ({"task": "t", "relevance": {"minRelativeScore": "0.3"}}, "input.relevance.minRelativeScore"),
        ({"task": "t", "relevance": {"minRelativeScore": True}}, "input.relevance.minRelativeScore"),
        ({"task": "t", "relevance": {"minRelativeScore": 2}}, "input.relevance.minRelativeScore"),
        ({"task": "t", "relevance": {"minScore": 0.3}}, "input.relevance"),
        ({"task": "t", "relevance": 0.3}, "input.relevance"),
    ],
)
def test_bad_relevance_bodies_name_the_field(body, field):
    with pytest.raises(BadInput) as e:
        request_from_json(body)
    assert e.value.extra.get("field") == field


def test_footer_wire_carries_omitted_by_reason():
    footer = PackFooter(10, 2, True, True, (), 1.0, omitted=Omitted(7, 3, 2))
    want = {"belowRelevanceFloor": 7, "overMaxItems": 3, "overTokenBudget": 2}
    assert footer_fields(footer)["omitted"] == want
    assert event_json(footer)["omitted"] == want
    from cairn.resolvers.packs import to_footer

    o = to_footer(footer).omitted
    assert (o.below_relevance_floor, o.over_max_items, o.over_token_budget) == (7, 3, 2)


T0 = datetime(2026, 1, 1, tzinfo=UTC)
HEADER = PackHeader("pack_1", "rpl_1", 4000, 15000, "BEST_EFFORT", "HYBRID", T0, T0, "cl100k_base", "trace_1")


def test_replay_conditions_record_the_fields_only_when_set():
    plain = replay_conditions(HEADER, PackRequest(task="t"))
    assert "maxItems" not in plain and "minRelativeScore" not in plain  # records as before the fields existed
    cut = replay_conditions(HEADER, PackRequest(task="t", max_items=3, min_relative_score=0.3))
    assert (cut["maxItems"], cut["minRelativeScore"]) == (3, 0.3)
    conditions, _ = decode_record(encode_record(cut, []))
    assert (conditions["maxItems"], conditions["minRelativeScore"]) == (3, 0.3)
