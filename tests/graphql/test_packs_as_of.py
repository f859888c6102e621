"""Context packs in time (asOf): the version valid or known at a time, superseded items, later
writes invisible in every leg, the notes for an empty past or a future system time, and a
deleted document never returned."""

from __future__ import annotations

import pytest

from tests.graphql.pack_calls import error_of, pack


def test_as_of_reads_the_right_version_and_flags_superseded(live):
    task = "Who is the chief financial officer of Example Corp?"
    cfo = live.ids["doc:cfo"]
    now = pack(live, task, filters={"documentIds": [cfo]})
    assert [i["text"] for i in now["items"]] == ["The chief financial officer of Example Corp is Bob Jones."]
    assert now["items"][0]["superseded"] is False
    assert now["items"][0]["validity"]["validFrom"].startswith("2023-07-01")
    then = pack(live, task, filters={"documentIds": [cfo]}, asOf={"validTime": "2021-06-01T00:00:00Z"})
    assert [i["text"] for i in then["items"]] == ["The chief financial officer of Example Corp is Alice Smith."]
    assert then["items"][0]["superseded"] is True
    assert then["items"][0]["citation"]["versionId"] == live.ids["ver:cfo"]
    doc = live.data("query($id:ID!){document(id:$id){versions{id recordedAt}}}", {"id": cfo}, live.tokens["agent"])
    v1_recorded = doc["document"]["versions"][0]["recordedAt"]
    known_then = pack(live, task, filters={"documentIds": [cfo]}, asOf={"systemTime": v1_recorded})
    assert [i["citation"]["versionId"] for i in known_then["items"]] == [live.ids["ver:cfo"]]
    before = pack(live, task, filters={"documentIds": [cfo]}, asOf={"validTime": "2019-01-01T00:00:00Z"})
    assert before["items"] == []


def test_deleted_document_is_never_returned(live):
    owner = live.tokens["owner"]
    r = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {
            "i": {
                "collectionId": live.ids["coll:finance"],
                "externalId": "ephemeral",
                "text": "The quarterly zeppelin budget is forty thousand euros.",
            }
        },
        owner,
    )
    doc_id = r["upsertDocument"]["documentId"]
    before = pack(live, "zeppelin budget", retrieval="LEXICAL")
    assert before["items"][0]["citation"]["documentId"] == doc_id
    seen_at = before["asOf"]["systemTime"]
    live.data("mutation($id:ID!){deleteDocument(id:$id){deletedAt}}", {"id": doc_id}, owner)
    # Asked as of a system time when it was visible: the read-permission re-check drops it.
    again = pack(live, "zeppelin budget", retrieval="LEXICAL", asOf={"systemTime": seen_at})
    assert doc_id not in {i["citation"]["documentId"] for i in again["items"]}
    r = live.gql("query($id:ID!){document(id:$id){id}}", {"id": doc_id}, live.tokens["agent"])
    assert error_of(r)["extensions"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("mode", ["HYBRID", "DENSE"])
def test_a_pack_as_of_a_past_time_ignores_later_writes_in_every_leg(live, mode):
    """Visibility applies to each leg (BM25 and the real model's dense leg) before RRF: a later
    document the task matches takes no rank in a pack as of before it (issue 14)."""
    task = "How does reciprocal rank fusion combine the BM25 and dense rankings?"
    first = pack(live, task, retrieval=mode)
    at = first["asOf"]
    assert at["validTime"] == at["systemTime"] and first["items"]
    baseline = pack(live, task, retrieval=mode, asOf=at)  # as of a given time: fused by rank (RRF)
    assert [i["citation"] for i in baseline["items"]] == [i["citation"] for i in first["items"]]
    owner = live.tokens["owner"]
    r = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {
            "i": {
                "collectionId": live.ids["coll:handbook"],
                "externalId": f"rrf-later-{mode}",
                "title": "Reciprocal rank fusion",
                "text": "Reciprocal rank fusion combines the BM25 and dense rankings: each ranking adds "
                "one over sixty plus the rank to a passage's score.",
            }
        },
        owner,
    )
    later = r["upsertDocument"]["documentId"]
    try:
        now = pack(live, task, retrieval=mode)
        assert later in {i["citation"]["documentId"] for i in now["items"][:3]}  # the task does match it
        again = pack(live, task, retrieval=mode, asOf=at)
        assert again["items"] == baseline["items"]
    finally:
        live.data("mutation($id:ID!){deleteDocument(id:$id){deletedAt}}", {"id": later}, owner)


def test_a_pack_as_of_before_any_version_says_why_it_is_empty(live):
    """Words match, but no version existed then: the notes say that, not only "no match"."""
    p = pack(
        live,
        "How does reciprocal rank fusion combine the BM25 and dense rankings?",
        retrieval="LEXICAL",
        asOf={"validTime": "1990-01-01T00:00:00Z"},
    )
    assert p["items"] == []
    assert any(
        n.startswith("lexical leg: ") and "matched, but no version of their documents is visible at this asOf" in n
        for n in p["notes"]
    ), p["notes"]


def test_a_future_system_time_is_read_as_now_and_said(live):
    """systemTime after now cannot be known: the pack reads as of now and its notes say so."""
    p = pack(live, "reciprocal rank fusion", asOf={"systemTime": "9999-01-01T00:00:00Z"})
    assert p["asOf"]["systemTime"] < "9999"
    assert any(
        n.startswith("asOf.systemTime 9999-01-01T00:00:00+00:00 is after now") and "reads as of now" in n
        for n in p["notes"]
    ), p["notes"]
