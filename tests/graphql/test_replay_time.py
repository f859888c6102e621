"""Replay and temporal reads through the running server: GraphQL and ``POST /v1/replays/{id}``."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests import local_http
from tests.db.test_temporal import NEW, OLD
from tests.graphql.conftest import _agent
from tests.graphql.test_concurrency import new_workspace

pytestmark = pytest.mark.both_backends  # replay records and temporal reads of stored versions

REPLAY = """query($id: ID!, $m: ReplayMode!, $t: String) { replay(replayId: $id, mode: $m, task: $t) {
  replayId packId mode asOf { validTime systemTime }
  items { rank kind status currentVersionId citation { documentId versionId passageId sha256 } }
  pack { items { rank text citation { passageId sha256 } } }
  diff { added { rank } removed { rank } moved { oldRank newRank } unchanged } } }"""
TASK = "How does reciprocal rank fusion combine the BM25 and dense rankings?"


def _pack(live, token: str) -> dict:
    q = "query($i: ContextPackInput!) { contextPack(input: $i) { replayId items { rank text citation { passageId } } } }"
    return live.data(q, {"i": {"task": TASK, "budget": {"maxTokens": 512}}}, token)["contextPack"]


def _post(live, rid: str, body, token: str, ctype: str = "application/json") -> httpx.Response:
    return local_http.post(
        f"{live.url}/v1/replays/{rid}",
        content=body if isinstance(body, bytes) else httpx.Request("POST", "/", json=body).content,
        headers={"Authorization": f"Bearer {token}", "Content-Type": ctype},
        timeout=120,
    )


def test_verify_and_recompute_over_graphql_and_http(live):
    agent = live.tokens["agent"]
    p = _pack(live, agent)
    assert p["items"]
    v = live.data(REPLAY, {"id": p["replayId"], "m": "VERIFY"}, agent)["replay"]
    assert [i["status"] for i in v["items"]] == ["UNCHANGED"] * len(p["items"])
    assert all(i["currentVersionId"] for i in v["items"]) and v["pack"] is None and v["diff"] is None
    r = live.data(REPLAY, {"id": p["replayId"], "m": "RECOMPUTE", "t": TASK}, agent)["replay"]
    assert [i["text"] for i in r["pack"]["items"]] == [i["text"] for i in p["items"]]
    assert r["diff"] == {"added": [], "removed": [], "moved": [], "unchanged": len(p["items"])}
    h = _post(live, p["replayId"], {"mode": "VERIFY"}, agent)
    assert h.status_code == 200, h.text
    assert [i["status"] for i in h.json()["data"]["items"]] == ["UNCHANGED"] * len(p["items"])
    assert h.headers["x-cairn-coordinate"] == "G1.U2.P1.Z3.A1"
    h = _post(live, p["replayId"], {"mode": "RECOMPUTE", "task": TASK}, agent)
    assert h.status_code == 200 and h.json()["data"]["diff"]["unchanged"] == len(p["items"])


def test_replay_refusals(live):
    agent = live.tokens["agent"]
    rid = _pack(live, agent)["replayId"]
    # another credential of the same workspace (here: the owner's member token) → not found
    r = live.gql(REPLAY, {"id": rid, "m": "VERIFY"}, live.tokens["owner"])
    assert r.json()["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert _post(live, rid, {"mode": "VERIFY"}, live.tokens["owner"]).status_code == 404
    # a credential without replay:run → refused before anything is looked up
    r = _post(live, rid, {"mode": "VERIFY"}, live.tokens["agentReadOnly"])
    assert r.status_code == 403, r.text
    # bad input names the field
    r = _post(live, rid, {"mode": "RECOMPUTE"}, agent)
    assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["field"] == "task"
    r = _post(live, rid, {"mode": "LATER"}, agent)
    assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["field"] == "mode"
    r = _post(live, rid, {"mode": "VERIFY", "extra": 1}, agent)
    assert r.status_code == 400
    assert _post(live, rid, b"mode=VERIFY", agent, "text/plain").status_code == 415
    r = _post(live, rid, b"{not json", agent)
    assert r.status_code == 400 and "ContextPackInput" not in r.json()["errors"][0]["message"]
    assert '"mode"' in r.json()["errors"][0]["message"]  # names the replay body's own shape
    r = live.gql(REPLAY, {"id": rid, "m": "RECOMPUTE", "t": "a different task"}, agent)
    assert r.json()["errors"][0]["extensions"]["field"] == "task"


def test_temporal_reads_are_governed_and_validated(live):
    """The "current CFO, and since when" statements of tests/db/test_temporal.py, in a workspace
    of their own, read back over GraphQL by an agent: the timeline in time order with the first
    statement ended by the second, the current facts naming John Roe since 1 July 2024."""
    ws = asyncio.run(new_workspace(live))
    owner = ws["owner0"]
    coll = live.data('mutation{createCollection(name:"temporal"){id}}', token=owner)["createCollection"]["id"]
    for ext, title, text, valid_from in (OLD, NEW):
        live.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
            {
                "i": {
                    "collectionId": coll,
                    "externalId": ext,
                    "title": title,
                    "text": text,
                    "validFrom": valid_from.isoformat(),
                }
            },
            owner,
        )
    agent = _agent(live, "temporal-reader", ["context:read"], token=owner)
    q = """query($s: String!, $l: Int!) { timeline(subject: $s, limit: $l) { text relation holder
      interval { validFrom validTo precision } citation { documentId } }
      currentFacts(subject: $s) { text relation holder since } }"""
    d = live.data(q, {"s": "Acme Corp", "l": 10}, agent)
    assert [(f["text"], f["relation"], f["holder"]) for f in d["timeline"]] == [
        (OLD[2], "chief financial officer", "Jane Doe"),
        (NEW[2], "chief financial officer", "John Roe"),
    ]
    old, new = (f["interval"] for f in d["timeline"])
    assert old["validFrom"].startswith("2019-01-01") and old["validTo"].startswith("2024-07-01")
    assert new["validFrom"].startswith("2024-07-01") and new["validTo"] is None
    assert all(f["citation"]["documentId"] for f in d["timeline"])
    assert [(f["relation"], f["holder"]) for f in d["currentFacts"]] == [("chief financial officer", "John Roe")]
    assert d["currentFacts"][0]["since"].startswith("2024-07-01")
    r = live.gql(q, {"s": "Acme Corp", "l": 0}, agent)
    err = r.json()["errors"][0]["extensions"]
    assert err["code"] == "BAD_USER_INPUT" and err["field"] == "limit"
    r = live.gql(q, {"s": "Acme Corp", "l": 5})
    assert r.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
