"""Context packs streamed: the graphql-transport-ws subscription and the NDJSON route give the
same items as the query, their errors are coded (and enveloped before the first item), and
a client that disconnects mid-stream leaves the server healthy."""

from __future__ import annotations

import asyncio
import json

import websockets

from tests import local_http
from tests.graphql import ws_calls
from tests.graphql.pack_calls import PACK_QUERY, STREAM_QUERY, _stream, pack


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
        await ws_calls.init(ws, {"Authorization": f"Bearer {live.tokens['agent']}"})
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
        await ws_calls.init(ws, {"Authorization": f"Bearer {live.tokens['agent']}"})
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
