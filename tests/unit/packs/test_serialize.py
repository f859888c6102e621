"""The NDJSON route's strict body parser, and the one serializer behind NDJSON and GraphQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cairn.app.core.errors import BadInput
from cairn.app.packs.serialize import (
    citation_fields,
    event_json,
    footer_fields,
    header_fields,
    item_fields,
    request_from_json,
)
from cairn.app.packs.types import Citation, ContextSetEntryRef, PackFooter, PackHeader, PackItem


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


# --- one serializer: the NDJSON lines and the GraphQL types carry the same fields ---------------

T0 = datetime(2024, 1, 1, tzinfo=UTC)
T1 = datetime(2024, 6, 1, 12, 30, tzinfo=UTC)
CITATION = Citation("doc_1", "ver_1", "psg_1", 3, 42, "ab" * 32, "notes/release.md", "Release notes", "coll_1", "docs")
ALTERNATE = Citation("doc_2", "ver_2", "psg_2", 0, 39, "cd" * 32, "notes/copy.md", "Copy", "coll_2", "archive")
ITEM = PackItem(
    rank=1,
    kind="EVIDENCE",
    text="Invoices are generated nightly.",
    tokens=6,
    trust="UNTRUSTED",
    score=0.03278689,
    lexical_rank=1,
    dense_rank=2,
    citation=CITATION,
    alternates=(ALTERNATE,),
    document_title="Release notes",
    collection_id="coll_1",
    valid_from=T0,
    valid_to=T1,
    superseded=True,
    contradiction=True,
    contradicts=("psg_9",),
    external_id="notes/release.md",
    collection_name="docs",
)
SET_ITEM = PackItem(  # an approved context-set entry: no citation, collection or validity
    rank=1,
    kind="VERIFIED_ANSWER",
    text="Q: When are invoices generated?\nA: Nightly.",
    tokens=11,
    trust="APPROVED",
    score=1.0,
    lexical_rank=None,
    dense_rank=None,
    citation=None,
    alternates=(),
    document_title="When are invoices generated?",
    collection_id=None,
    valid_from=None,
    valid_to=None,
    superseded=False,
    contradiction=False,
    context_set_entry=ContextSetEntryRef("cs_1", "cse_1", 3, "doc_1", "psg_1"),
)
HEADER = PackHeader("pack_1", "rpl_1", 4000, 15000, "BEST_EFFORT", "HYBRID", T0, T1, "cl100k_base", "trace_1")
TIMINGS = {
    "embedMs": 1.0,
    "lexicalMs": 2.0,
    "vectorMs": 3.0,
    "legsMs": 4.0,
    "fusionMs": 5.0,
    "resolveMs": 6.0,
    "dedupPackMs": 7.0,
    "recheckMs": 8.0,
    "contradictionMs": 9.0,
    "replayMs": 10.0,
}
FOOTER = PackFooter(6, 1, True, False, ("LATENCY",), 12.5, TIMINGS, 3, 1, ("a note",))
ENVELOPE_KEYS = {"type", "coordinate", "capability"}


def graphql_fields(type_name: str) -> set[str]:
    """The camelCase field names of a GraphQL type in the served schema."""
    from cairn.resolvers.schema import schema

    return set(schema._schema.get_type(type_name).fields)


@pytest.mark.parametrize(
    "event,type_name",
    [(ITEM, "PackItem"), (SET_ITEM, "PackItem"), (HEADER, "PackHeader"), (FOOTER, "PackFooter")],
)
def test_ndjson_events_carry_the_graphql_fields(event, type_name):
    wire = event_json(event, coordinate="Query.contextPack", capability="context.pack")
    assert set(wire) - ENVELOPE_KEYS == graphql_fields(type_name) - ENVELOPE_KEYS


def test_nested_ndjson_objects_carry_the_graphql_fields():
    item = event_json(ITEM)
    assert set(item["citation"]) == graphql_fields("Citation")
    assert all(set(a) == graphql_fields("Citation") for a in item["alternateCitations"])
    assert set(item["ranks"]) == graphql_fields("LegRanks")
    assert set(item["validity"]) == graphql_fields("Validity")
    assert set(event_json(HEADER)["asOf"]) == graphql_fields("AsOf")
    # the NDJSON footer has carried the six per-stage timings it was specified with; the
    # GraphQL PackTimings type adds legs, recheck, contradiction and replay
    assert set(event_json(FOOTER)["timings"]) < graphql_fields("PackTimings")


def test_item_fields_is_the_one_source():
    fields = item_fields(ITEM)
    assert {k: v for k, v in event_json(ITEM).items() if k != "type"} == {
        **fields,
        "validity": {"validFrom": T0.isoformat(), "validTo": T1.isoformat()},
    }
    assert fields["citation"] == citation_fields(CITATION)
    assert header_fields(HEADER)["asOf"] == {"validTime": T0, "systemTime": T1}
    assert set(footer_fields(FOOTER)["timings"]) == graphql_fields("PackTimings")


def test_graphql_objects_are_built_from_the_same_fields():
    from cairn.resolvers.packs import to_footer, to_item

    item = to_item(ITEM)
    assert (item.rank, item.kind.value, item.trust.value, item.score) == (1, "EVIDENCE", "UNTRUSTED", 0.03278689)
    assert (item.ranks.lexical, item.ranks.dense) == (1, 2)
    assert item.citation.sha256 == CITATION.sha256 and item.alternate_citations[0].document_id == "doc_2"
    assert (item.validity.valid_from, item.validity.valid_to) == (T0, T1)
    assert (item.superseded, item.contradiction, item.contradicts) == (True, True, ["psg_9"])
    footer = to_footer(FOOTER)
    assert footer.timings.replay_ms == 10.0 and footer.timings.dedup_pack_ms == 7.0
    assert (footer.incomplete_reasons, footer.notes, footer.duplicates_merged) == (["LATENCY"], ["a note"], 1)


def test_items_and_citations_name_their_source():
    """metadata["source"] needs no extra call: every item and citation carries the document's
    external id, title and collection id and name."""
    item = event_json(ITEM)
    source = ("externalId", "documentTitle", "collectionId", "collectionName")
    assert [item[k] for k in source] == ["notes/release.md", "Release notes", "coll_1", "docs"]
    assert [item["citation"][k] for k in source] == ["notes/release.md", "Release notes", "coll_1", "docs"]
    assert [item["alternateCitations"][0][k] for k in source] == ["notes/copy.md", "Copy", "coll_2", "archive"]


def test_fact_items_carry_their_interval_through_the_one_serializer():
    from dataclasses import replace

    from cairn.resolvers.packs import to_item

    fact = replace(ITEM, kind="FACT", interval=(T0, None, "month"))
    wire = event_json(fact)
    assert wire["interval"] == {"validFrom": T0.isoformat(), "validTo": None, "precision": "MONTH"}
    assert set(wire["interval"]) == graphql_fields("FactInterval")
    assert item_fields(fact)["interval"] == {"validFrom": T0, "validTo": None, "precision": "MONTH"}
    assert event_json(ITEM)["interval"] is None  # other kinds: null, the key always there
    item = to_item(fact)
    assert (item.kind.value, item.interval.valid_from, item.interval.valid_to) == ("FACT", T0, None)
    assert item.interval.precision.value == "MONTH" and to_item(ITEM).interval is None


def test_context_set_items_go_through_the_same_serializer():
    wire = event_json(SET_ITEM)
    assert set(wire["contextSetEntry"]) == graphql_fields("ContextSetEntryRef")
    assert (wire["citation"], wire["validity"], wire["collectionId"]) == (None, None, None)
    assert {k: v for k, v in wire.items() if k != "type"} == item_fields(SET_ITEM)
    assert event_json(ITEM)["contextSetEntry"] is None
    from cairn.resolvers.packs import to_item

    item = to_item(SET_ITEM)
    assert (item.kind.value, item.trust.value, item.citation, item.validity) == (
        "VERIFIED_ANSWER",
        "APPROVED",
        None,
        None,
    )
    ref = item.context_set_entry
    assert (ref.context_set_id, ref.entry_id, ref.set_version, ref.cited_document_id) == ("cs_1", "cse_1", 3, "doc_1")
    # the NDJSON footer carries the set-first timings too
    assert {"firstSetItemMs", "firstEvidenceItemMs"} <= set(event_json(FOOTER)["timings"])
