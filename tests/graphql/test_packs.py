"""Context packs end to end: GraphQL over HTTP, graphql-transport-ws and NDJSON, real model."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re

import httpx
import pytest
import websockets

from cairn.retrieval.tokens import count_tokens
from tests import local_http

PACK_FIELDS = """
  packId replayId maxTokens tokensUsed truncated complete incompleteReasons latencyMs tokenizer retrieval
  asOf { validTime systemTime } candidates duplicatesMerged notes
  timings { embedMs lexicalMs vectorMs fusionMs resolveMs dedupPackMs }
  items { rank kind text tokens trust score ranks { lexical dense } externalId documentTitle collectionId collectionName
          citation { documentId versionId passageId start end sha256
                     externalId documentTitle collectionId collectionName }
          alternateCitations { documentId versionId passageId start end sha256
                               externalId documentTitle collectionId collectionName }
          validity { validFrom validTo } superseded contradiction contradicts }
"""
PACK_QUERY = f"query($i: ContextPackInput!) {{ contextPack(input: $i) {{ {PACK_FIELDS} }} }}"
ITEM_FIELDS = PACK_FIELDS.split("items {", 1)[1].rsplit("}", 1)[0]
STREAM_QUERY = f"""subscription($i: ContextPackInput!) {{ contextPackStream(input: $i) {{
  __typename
  ... on PackHeader {{ packId replayId maxTokens tokenizer traceId coordinate capability }}
  ... on PackItem {{ {ITEM_FIELDS} }}
  ... on PackFooter {{ tokensUsed itemCount truncated complete latencyMs }}
}} }}"""


def pack(live, task: str, token: str | None = None, **extra) -> dict:
    return live.data(PACK_QUERY, {"i": {"task": task, **extra}}, token or live.tokens["agent"])["contextPack"]


def error_of(resp: httpx.Response) -> dict:
    body = resp.json()
    assert body.get("errors"), body
    return body["errors"][0]


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


def test_lexical_mode_skips_the_embedding(live):
    p = pack(live, "Mount Etna stratovolcano", retrieval="LEXICAL")
    assert p["retrieval"] == "LEXICAL"
    assert p["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert all(i["ranks"]["dense"] is None for i in p["items"])
    assert p["timings"]["embedMs"] is None and p["timings"]["vectorMs"] is None
    _single_leg_scores(p)


def test_dense_mode_skips_bm25(live):
    # "volcano in Italy" shares no word with the Etna passage's stems except through meaning
    p = pack(live, "an active volcano in Italy", retrieval="DENSE")
    assert p["retrieval"] == "DENSE"
    assert p["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert all(i["ranks"]["lexical"] is None for i in p["items"])
    dense_ranks = [i["ranks"]["dense"] for i in p["items"]]
    assert dense_ranks[0] == 1 and dense_ranks == sorted(dense_ranks) and None not in dense_ranks
    assert p["timings"]["lexicalMs"] is None and p["timings"]["embedMs"] is not None
    _single_leg_scores(p)


def _single_leg_scores(p: dict) -> None:
    """One leg (retrieval.fusion.hybrid_fusion): the top item's normalised score is 1, so its
    score is the leg's weight, base 0.5 times (1 + β · confidence), confidence in [0, 1]."""
    from cairn.retrieval.fusion import HYBRID_CONFIDENCE_BOOST as beta

    scores = [i["score"] for i in p["items"]]
    assert 0.5 <= scores[0] <= 0.5 * (1 + beta) and scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    "task,doc",
    [("ベクトル検索", "ja-search"), ("東京のチーム", "ja-search"), ("数据库索引", "zh-db"), ("全文检索", "zh-db")],
)
def test_japanese_and_chinese_are_searchable_lexically(live, task, doc):
    p = pack(live, task, retrieval="LEXICAL")
    assert p["items"] and p["items"][0]["citation"]["documentId"] == live.ids[f"doc:{doc}"]


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


async def _stream(live, variables: dict, token: str) -> list[dict]:
    async with websockets.connect(live.ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(
            json.dumps({"id": "1", "type": "subscribe", "payload": {"query": STREAM_QUERY, "variables": variables}})
        )
        events = []
        while True:
            msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if msg["type"] == "complete":
                return events
            if msg["type"] == "error":
                return [{"__error__": msg["payload"]}]
            assert msg["type"] == "next", msg
            if msg["payload"].get("errors"):
                return [{"__error__": msg["payload"]["errors"]}]
            events.append(msg["payload"]["data"]["contextPackStream"])


async def test_subscription_streams_the_same_items(live):
    variables = {"i": {"task": "How does reciprocal rank fusion work?", "budget": {"maxTokens": 1500}}}
    events = await _stream(live, variables, live.tokens["agent"])
    kinds = [e["__typename"] for e in events]
    assert kinds[0] == "PackHeader" and kinds[-1] == "PackFooter"
    assert set(kinds[1:-1]) <= {"PackItem"}
    header, footer = events[0], events[-1]
    assert header["coordinate"] == "G1.U1.P1.Z1.A2"
    assert header["capability"] == "context:pack" and header["traceId"].startswith("trace_")
    streamed = [{k: v for k, v in e.items() if k != "__typename"} for e in events[1:-1]]
    p = live.data(PACK_QUERY, variables, live.tokens["agent"])["contextPack"]
    assert json.dumps(streamed, sort_keys=True) == json.dumps(p["items"], sort_keys=True)
    assert footer["itemCount"] == len(streamed) and footer["tokensUsed"] == p["tokensUsed"]


async def test_subscription_errors_are_coded_and_need_auth(live):
    events = await _stream(live, {"i": {"task": "x", "budget": {"maxTokens": 10}}}, live.tokens["agent"])
    errors = events[0]["__error__"]
    assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT"
    events = await _stream(live, {"i": {"task": "x"}}, "ck_0000000000000000_" + "A" * 43)
    assert events[0]["__error__"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    async with websockets.connect(live.ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {live.tokens['agent']}"}})
        )
        await ws.recv()
        await ws.send(
            json.dumps({"id": "1", "type": "subscribe", "payload": {"query": "subscription { contextPackStream("}})
        )
        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
        # an unparseable subscribe fails that operation with a coded error; the socket stays open
        assert msg["type"] == "error" and msg["id"] == "1"
        assert msg["payload"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
        assert "Syntax Error" in msg["payload"][0]["message"]


def test_ndjson_stream_equals_the_pack(live):
    body = {"task": "When are invoices generated?", "budget": {"maxTokens": 800}}
    with local_http.stream(
        "POST",
        f"{live.url}/v1/context-packs/stream",
        json=body,
        headers={
            "Authorization": f"Bearer {live.tokens['agent']}",
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        },
        timeout=60,
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("application/x-ndjson")
        assert r.headers["x-cairn-trace"] == "trace_4bf92f3577b34da6a3ce929d0e0e4736"
        assert r.headers["x-cairn-capability"] == "context:pack"
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "footer"
    items = [{k: v for k, v in line.items() if k != "type"} for line in lines[1:-1]]
    p = live.data(PACK_QUERY, {"i": body}, live.tokens["agent"])["contextPack"]
    assert [i["text"] for i in items] == [i["text"] for i in p["items"]]
    assert [i["citation"] for i in items] == [i["citation"] for i in p["items"]]
    assert [i["score"] for i in items] == [i["score"] for i in p["items"]]


def test_ndjson_errors_before_the_first_item_are_enveloped(live):
    r = local_http.post(
        f"{live.url}/v1/context-packs/stream",
        json={"task": "x", "budget": {"maxTokens": 5}},
        headers={"Authorization": f"Bearer {live.tokens['agent']}"},
        timeout=30,
    )
    assert r.status_code == 400
    body = r.json()
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert body["extensions"]["envelope"]["protocol"] == "cairn.envelope.v1"
    r = local_http.post(
        f"{live.url}/v1/context-packs/stream",
        json={"task": "x", "bogus": 1},
        headers={"Authorization": f"Bearer {live.tokens['agent']}"},
        timeout=30,
    )
    assert r.status_code == 400 and "bogus" in r.json()["errors"][0]["message"]


async def test_client_disconnect_mid_stream_leaves_server_healthy(live):
    async with websockets.connect(live.ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {live.tokens['agent']}"}})
        )
        await ws.recv()
        await ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": STREAM_QUERY, "variables": {"i": {"task": "billing region"}}},
                }
            )
        )
    p = pack(live, "billing region")
    assert p["items"]


def test_a_japanese_task_is_served_by_the_multilingual_model_and_the_pack_says_so(live):
    p = pack(live, "ベクトル検索は何を探す方法ですか")
    assert not any(n.startswith("dense leg skipped") for n in p["notes"]), p["notes"]
    assert [n for n in p["notes"] if n.startswith("dense leg: intfloat/multilingual-e5-small (the task is written")]
    assert p["items"][0]["citation"]["documentId"] == live.ids["doc:ja-search"]
    assert p["items"][0]["ranks"]["dense"] == 1
    # an English task: MiniLM for the English passages, e5 for the workspace's CJK passages
    english = pack(live, "Mount Etna volcano")
    assert [n for n in english["notes"] if "(cross-lingual)" in n], english["notes"]
    assert english["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert any(i["ranks"]["dense"] for i in english["items"])


@pytest.mark.parametrize(
    "mode,note",
    [
        ("HYBRID", "no passage matched any query word, and no passage is similar enough to the task"),
        ("LEXICAL", "no passage matched any query word (BM25)"),
        ("DENSE", "no passage is similar enough to the task"),
    ],
)
def test_a_nonsense_task_gets_no_items_and_a_note(live, mode, note):
    p = pack(live, "zzzz qqqq", retrieval=mode)
    assert p["items"] == [] and p["tokensUsed"] == 0
    assert [n for n in p["notes"] if n.startswith(note)], p["notes"]
    if mode != "LEXICAL":  # the note names each model's best similarity and the floor it missed
        # (this workspace has Japanese passages too: an English task's e5 matches are
        # cross-lingual, held to 0.83, the floor the note must show)
        found = re.findall(r"(\d\.\d\d) for (\S+) against its floor (\d\.\d\d)", p["notes"][0])
        assert [(model, floor) for _, model, floor in found] == [
            ("sentence-transformers/all-MiniLM-L6-v2", "0.30"),
            ("intfloat/multilingual-e5-small", "0.83"),
        ], p["notes"][0]
        assert all(float(best) < float(floor) for best, _, floor in found)


def test_a_task_found_by_meaning_only_is_flagged_and_a_real_task_is_not(live, monkeypatch):
    # no query word occurs in the corpus (Porter: sicilian ≠ sicili, eruption ≠ erupt…), so the
    # Etna passage comes from the dense leg alone, above the floor
    p = pack(live, "Sicilian eruptions")
    assert p["items"] and p["items"][0]["citation"]["documentId"] == live.ids["doc:volcano"]
    assert all(i["ranks"]["lexical"] is None for i in p["items"])
    assert [n for n in p["notes"] if n.startswith("no passage matched any query word: every item comes from dense")]
    # a real task: no note, and every item with lexical evidence is kept, in order, with its score
    from cairn.app.packs import evidence as pack_evidence

    task = "billing service region latency"
    floored = pack(live, task, budget={"maxTokens": 2000})
    monkeypatch.setitem(pack_evidence.DENSE_SIMILARITY_FLOOR, "sentence-transformers/all-MiniLM-L6-v2", -1.0)
    unfloored = pack(live, task, budget={"maxTokens": 2000})
    assert [n for n in floored["notes"] if not n.startswith("dense leg: ")] == []
    assert floored["items"][0] == unfloored["items"][0]
    lexical = [(i["text"], i["score"]) for i in unfloored["items"] if i["ranks"]["lexical"] is not None]
    assert [(i["text"], i["score"]) for i in floored["items"] if i["ranks"]["lexical"] is not None] == lexical
    assert len(floored["items"]) < len(unfloored["items"])  # unrelated dense-only passages dropped


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
