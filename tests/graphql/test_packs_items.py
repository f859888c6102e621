"""Context-pack items end to end (real model): citations that resolve to the stored text, the
token budget, ranks and fused scores, byte-identical repeats, and duplicates collapsed into
one item with alternate citations."""

from __future__ import annotations

import hashlib
import json

import pytest

from cairn.retrieval.tokens import count_tokens
from tests.graphql.pack_calls import pack


@pytest.mark.both_backends  # citations resolve to the stored text
def test_pack_is_cited_budgeted_and_reproducible_from_documents(live):
    p = pack(live, "How does reciprocal rank fusion combine the BM25 and dense rankings?", budget={"maxTokens": 512})
    assert p["items"], p
    top = p["items"][0]
    assert top["citation"]["documentId"] == live.ids["doc:packs"]
    assert "Reciprocal rank fusion" in top["text"]
    # the item and its citation name their source: no extra call for metadata["source"]
    source = ("externalId", "documentTitle", "collectionId", "collectionName")
    expected_source = ["packs", "Context packs", live.ids["coll:handbook"], "handbook"]
    assert [top[k] for k in source] == [top["citation"][k] for k in source] == expected_source
    assert p["tokenizer"] == "cl100k_base"
    assert p["tokensUsed"] == sum(i["tokens"] for i in p["items"]) <= 512
    assert [i["rank"] for i in p["items"]] == list(range(1, len(p["items"]) + 1))
    scores = [i["score"] for i in p["items"]]
    assert scores == sorted(scores, reverse=True)
    for item in p["items"]:
        assert item["trust"] == "UNTRUSTED"
        assert item["tokens"] == count_tokens(item["text"])
        c = item["citation"]
        assert c["sha256"] == hashlib.sha256(item["text"].encode()).hexdigest()
        doc = live.data(
            "query($id: ID!){ document(id: $id) { versions { id text } } }",
            {"id": c["documentId"]},
            live.tokens["agent"],
        )["document"]
        version = next(v for v in doc["versions"] if v["id"] == c["versionId"])
        assert version["text"][c["start"] : c["end"]] == item["text"]
    # hybrid (retrieval.fusion.hybrid_fusion): the top item is first in both legs, so its score is
    # the sum of the legs' weights, each in [base, base · (1 + β)] (min-max normalised score 1)
    from cairn.retrieval.fusion import HYBRID_CONFIDENCE_BOOST as beta
    from cairn.retrieval.fusion import HYBRID_LEXICAL_SHARE as alpha

    assert top["ranks"] == {"lexical": 1, "dense": 1}, top["ranks"]
    assert 1.0 <= top["score"] <= (alpha + (1 - alpha)) * (1 + beta)
    assert p["timings"]["embedMs"] is not None


@pytest.mark.both_backends  # row order read back from SQL
def test_same_input_gives_byte_identical_items(live):
    args = dict(budget={"maxTokens": 1000})
    a = pack(live, "billing service region latency", **args)
    b = pack(live, "billing service region latency", **args)
    assert json.dumps(a["items"], sort_keys=True) == json.dumps(b["items"], sort_keys=True)
    assert a["packId"] != b["packId"] and a["replayId"] != b["replayId"]


def test_near_and_exact_duplicates_collapse_with_alternate_citations(live):
    p = pack(live, "billing service moved to the Frankfurt region to reduce latency", budget={"maxTokens": 2000})
    billing = [i for i in p["items"] if "Frankfurt" in i["text"]]
    assert len(billing) == 1, [i["text"] for i in p["items"]]
    alt_docs = {a["documentId"] for a in billing[0]["alternateCitations"]}
    both = {live.ids["doc:dedup-a"], live.ids["doc:dedup-b"]}
    assert {billing[0]["citation"]["documentId"]} | alt_docs == both
    p = pack(live, "When are invoices generated?", budget={"maxTokens": 2000})
    invoices = [
        i
        for i in p["items"]
        if i["text"] == "Invoices are generated nightly at two o'clock and emailed to the billing contact."
    ]
    assert len(invoices) == 1
    docs = {invoices[0]["citation"]["documentId"]} | {a["documentId"] for a in invoices[0]["alternateCitations"]}
    assert docs == {live.ids["doc:dedup-a"], live.ids["doc:exact-copy"]}
    assert p["duplicatesMerged"] >= 1


def test_a_paragraph_repeated_between_different_neighbours_is_one_item(live):
    """The same paragraph between different intro and outro lines: three passages whose
    Jaccard is 0.61–0.63 (< 0.8), one item with two alternate citations."""
    owner, hb = live.tokens["owner"], live.ids["coll:handbook"]
    para = (
        "The Oslo data centre switches to heat pumps in May, cutting its cooling power by a third "
        "and feeding waste heat to nearby homes."
    )
    wraps = [
        ("Facilities update.", "Questions to the site team."),
        ("From the energy report:", "End of excerpt."),
        ("Board memo, item four.", "Approved unanimously."),
    ]
    docs = [
        live.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
            {"i": {"collectionId": hb, "externalId": f"oslo-{n}", "text": f"{intro}\n\n{para}\n\n{outro}"}},
            owner,
        )["upsertDocument"]["documentId"]
        for n, (intro, outro) in enumerate(wraps)
    ]
    try:
        p = pack(live, "Oslo data centre heat pumps cooling power", filters={"documentIds": docs})
        assert len(p["items"]) == 1, [i["text"] for i in p["items"]]
        item = p["items"][0]
        assert para in item["text"] and p["duplicatesMerged"] == 2
        cited = [item["citation"]["documentId"]] + [a["documentId"] for a in item["alternateCitations"]]
        assert sorted(cited) == sorted(docs)
    finally:
        for doc in docs:
            live.data("mutation($id:ID!){deleteDocument(id:$id){deletedAt}}", {"id": doc}, owner)
