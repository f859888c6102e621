"""The NDJSON route's strict body parser."""

from __future__ import annotations

import pytest

from app.core.errors import BadInput
from app.packs.serialize import request_from_json


def test_full_body_parses():
    req = request_from_json(
        {
            "task": "t",
            "budget": {"maxTokens": 300, "maxLatencyMs": 2000, "coverage": "REQUIRE_COMPLETE"},
            "asOf": {"validTime": "2024-01-01T00:00:00Z"},
            "filters": {"collectionIds": ["c"], "sources": ["PASSAGES", "DOCUMENTS"]},
            "retrieval": "LEXICAL",
        }
    )
    assert (req.max_tokens, req.max_latency_ms, req.coverage, req.retrieval) == (
        300,
        2000,
        "REQUIRE_COMPLETE",
        "LEXICAL",
    )
    assert req.valid_time.year == 2024 and req.collection_ids == ("c",) and req.sources == ("PASSAGES", "DOCUMENTS")


def test_null_budget_and_filters_mean_the_defaults():
    req = request_from_json({"task": "t", "budget": None, "asOf": None, "filters": None, "contextSetId": None})
    assert (req.max_tokens, req.retrieval) == (4000, "HYBRID")


@pytest.mark.parametrize(
    "body,field",
    [
        (None, "input"),
        ([1], "input"),
        ({"task": 3}, "input.task"),
        ({}, "input.task"),
        ({"task": "t", "budget": {"maxTokens": "300"}}, "input.budget.maxTokens"),
        ({"task": "t", "budget": {"maxTokens": True}}, "input.budget.maxTokens"),
        ({"task": "t", "budget": {"max_tokens": 300}}, "input.budget"),
        ({"task": "t", "asOf": {"validTime": "yesterday"}}, "input.asOf.validTime"),
        ({"task": "t", "filters": {"collectionIds": "c"}}, "input.filters.collectionIds"),
        ({"task": "t", "retrieval": "SPARSE"}, "input.retrieval"),
        ({"task": "t", "extra": 1}, "input"),
        # null where GraphQL has a non-null field with a default: refused, not silently defaulted
        ({"task": "t", "budget": {"maxTokens": None}}, "input.budget.maxTokens"),
        ({"task": "t", "budget": {"maxLatencyMs": None}}, "input.budget.maxLatencyMs"),
        ({"task": "t", "budget": {"coverage": None}}, "input.budget.coverage"),
        ({"task": "t", "retrieval": None}, "input.retrieval"),
    ],
)
def test_bad_bodies_name_the_field(body, field):
    with pytest.raises(BadInput) as e:
        request_from_json(body)
    assert e.value.extra.get("field") == field
