"""Context-pack inputs: collection and document filters, budget truncation, the input limits
refused with field and code, unknown filter ids, the DOCUMENTS source (needs queries:run)
and the GRAPH source reported in the notes."""

from __future__ import annotations

import pytest

from tests.graphql.pack_calls import PACK_QUERY, error_of, pack


@pytest.mark.both_backends  # filters resolve ids in SQL
def test_collection_filter_and_budget_truncation(live):
    fin = live.ids["coll:finance"]
    p = pack(live, "facts", filters={"collectionIds": [fin]})
    assert p["items"] and {i["collectionId"] for i in p["items"]} == {fin}
    owner = live.tokens["owner"]
    paragraphs = [
        f"Glacier survey note {n}: the ice front retreated {n * 7} metres along transect {n}, "
        f"and meltwater channels widened near the moraine in section {n}."
        for n in range(1, 25)
    ]
    doc = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {"i": {"collectionId": fin, "externalId": "glacier-log", "text": "\n\n".join(paragraphs)}},
        owner,
    )["upsertDocument"]["documentId"]
    try:
        wide = pack(
            live,
            "glacier ice front retreat meltwater moraine",
            budget={"maxTokens": 256},
            filters={"documentIds": [doc]},
            retrieval="LEXICAL",
        )
        assert 0 < wide["tokensUsed"] == sum(i["tokens"] for i in wide["items"]) <= 256
        assert wide["truncated"] is True and wide["complete"] is True
    finally:
        live.data("mutation($id:ID!){deleteDocument(id:$id){deletedAt}}", {"id": doc}, owner)


@pytest.mark.parametrize(
    "inp,field",
    [
        ({"task": ""}, "input.task"),
        ({"task": "x" * 4001}, "input.task"),
        ({"task": "ok", "budget": {"maxTokens": 255}}, "input.budget.maxTokens"),
        ({"task": "ok", "budget": {"maxTokens": 32001}}, "input.budget.maxTokens"),
        ({"task": "ok", "budget": {"maxLatencyMs": 999}}, "input.budget.maxLatencyMs"),
        ({"task": "ok", "budget": {"maxLatencyMs": 60001}}, "input.budget.maxLatencyMs"),
        ({"task": "ok", "filters": {"collectionIds": [f"c{i}" for i in range(9)]}}, "input.filters.collectionIds"),
        ({"task": "ok", "filters": {"documentIds": [f"d{i}" for i in range(21)]}}, "input.filters.documentIds"),
        ({"task": "ok", "filters": {"sources": []}}, "input.filters.sources"),
        ({"task": "ok", "asOf": {"validTime": "2025-01-01T00:00:00"}}, "input.asOf.validTime"),
    ],
)
def test_limits_are_refused_with_field_and_code(live, inp, field):
    r = live.gql(PACK_QUERY, {"i": inp}, live.tokens["agent"])
    err = error_of(r)
    assert err["extensions"]["code"] == "BAD_USER_INPUT", err
    assert err["extensions"]["field"] == field
    assert r.status_code == 400
    env = r.json()["extensions"]["envelope"]
    assert env["status"] == "ERROR" and env["capability"] == "context:pack"


@pytest.mark.both_backends  # filters resolve ids in SQL
def test_unknown_filter_ids_are_not_found(live):
    r = live.gql(PACK_QUERY, {"i": {"task": "x", "filters": {"collectionIds": ["col_nope"]}}}, live.tokens["agent"])
    assert error_of(r)["extensions"]["code"] == "NOT_FOUND"
    assert r.status_code == 404


def test_whole_documents_need_queries_run(live):
    r = live.gql(
        PACK_QUERY, {"i": {"task": "volcano", "filters": {"sources": ["DOCUMENTS"]}}}, live.tokens["agentReadOnly"]
    )
    assert error_of(r)["extensions"]["code"] == "AGENT_SCOPE_MISSING"
    p = pack(live, "Mount Etna volcano", filters={"sources": ["DOCUMENTS"]})
    top = p["items"][0]
    assert top["kind"] == "WHOLE_DOCUMENT" and top["citation"]["passageId"] is None
    assert top["citation"]["start"] == 0 and top["citation"]["end"] == len(top["text"])


def test_graph_source_is_reported_not_silently_ignored(live):
    p = pack(live, "volcano", filters={"sources": ["PASSAGES", "GRAPH"]})
    assert any(n.startswith("GRAPH:") for n in p["notes"])
