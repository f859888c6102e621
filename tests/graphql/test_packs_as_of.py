"""Context packs in time (asOf): the version valid or known at a time, superseded items, later
writes invisible in every leg, the notes for an empty past or a future system time, and a
deleted document read as it was before its deletion, never after."""

from __future__ import annotations

import pytest

from tests.graphql.pack_calls import error_of, pack
from tests.graphql.test_mcp import call

pytestmark = pytest.mark.both_backends  # as-of reads versions and deletions by valid and system time


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


def test_a_deleted_document_reads_as_it_was_before_its_deletion(live):
    """A deletion is a system-time event like any other (docs/api.md bitemporal table, issue 32
    item 11): every as-of read before it — a pack, RECOMPUTE, document(id, asOf), the MCP
    passage and citation tools — still sees the document; reads as of now (or after the
    deletion) never do, and VERIFY (as of now) says UNAVAILABLE."""
    owner, agent = live.tokens["owner"], live.tokens["agent"]
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
    top = before["items"][0]
    assert top["citation"]["documentId"] == doc_id
    seen_at = before["asOf"]["systemTime"]
    gone_at = live.data("mutation($id:ID!){deleteDocument(id:$id){deletedAt}}", {"id": doc_id}, owner)[
        "deleteDocument"
    ]["deletedAt"]
    assert seen_at < gone_at
    # as of now, or as of the deletion: nowhere
    now = pack(live, "zeppelin budget", retrieval="LEXICAL")
    assert doc_id not in {i["citation"]["documentId"] for i in now["items"]}
    at_deletion = pack(live, "zeppelin budget", retrieval="LEXICAL", asOf={"systemTime": gone_at})
    assert doc_id not in {i["citation"]["documentId"] for i in at_deletion["items"]}
    r = live.gql("query($id:ID!){document(id:$id){id}}", {"id": doc_id}, agent)
    assert error_of(r)["extensions"]["code"] == "NOT_FOUND"
    # as of a system time before the deletion: as it was then, item for item
    again = pack(live, "zeppelin budget", retrieval="LEXICAL", asOf={"systemTime": seen_at})
    assert again["items"][0]["citation"] == top["citation"] and again["items"][0]["text"] == top["text"]
    q = "query($id:ID!,$a:AsOfInput){document(id:$id, asOf:$a){id currentVersionId versions{text}}}"
    d = live.data(q, {"id": doc_id, "a": {"systemTime": seen_at}}, agent)["document"]
    assert (d["id"], d["currentVersionId"]) == (doc_id, top["citation"]["versionId"])
    assert d["versions"][0]["text"] == "The quarterly zeppelin budget is forty thousand euros."
    r = live.gql(q, {"id": doc_id, "a": {"systemTime": gone_at}}, agent)
    assert error_of(r)["extensions"]["code"] == "NOT_FOUND"
    c = top["citation"]
    p = call(live, agent, "get_passage", {"passageId": c["passageId"], "asOf": {"systemTime": seen_at}})
    assert not p.isError and p.structuredContent["passage"]["text"] == top["text"]
    assert call(live, agent, "get_passage", {"passageId": c["passageId"]}).isError
    cite = {k: c[k] for k in ("documentId", "start", "end", "sha256")}
    v = call(live, agent, "get_citation", {**cite, "asOf": {"systemTime": seen_at}}).structuredContent
    assert v["status"] == "VERIFIED", v
    # replay: RECOMPUTE reads as of the recorded systemTime (before the deletion): nothing moves;
    # VERIFY checks against now: the document is gone
    rq = """query($id:ID!,$m:ReplayMode!,$t:String){replay(replayId:$id, mode:$m, task:$t){
      items{status currentVersionId} pack{items{text citation{documentId}}}
      diff{added{rank} removed{rank} moved{oldRank} unchanged}}}"""
    rc = live.data(rq, {"id": before["replayId"], "m": "RECOMPUTE", "t": "zeppelin budget"}, agent)["replay"]
    assert rc["diff"] == {"added": [], "removed": [], "moved": [], "unchanged": len(before["items"])}
    assert [i["text"] for i in rc["pack"]["items"]] == [i["text"] for i in before["items"]]
    vf = live.data(rq, {"id": before["replayId"], "m": "VERIFY"}, agent)["replay"]
    assert vf["items"][0] == {"status": "UNAVAILABLE", "currentVersionId": None}


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
