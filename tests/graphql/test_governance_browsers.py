"""Browsers (SPEC §9): agent credentials are refused from browsers on HTTP, the NDJSON route and
websockets, member tokens are not; the CORS allow-list for member browsers."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from tests import local_http
from tests.graphql import ws_calls
from tests.graphql.pack_calls import PACK, STREAM_QUERY, error_of


@pytest.mark.parametrize(
    "header", [{"Origin": "https://evil.example"}, {"Sec-Fetch-Mode": "cors"}, {"Sec-Fetch-Site": "cross-site"}]
)
def test_agent_credentials_are_refused_from_browsers(live, header):
    q, v = PACK
    r = live.gql(q, v, live.tokens["agent"], headers=header)
    assert r.status_code == 403
    assert error_of(r)["extensions"]["code"] == "AGENT_BROWSER_REQUEST_REFUSED"
    assert r.json()["extensions"]["envelope"]["status"] == "REJECTED"
    r = local_http.post(
        f"{live.url}/v1/context-packs/stream",
        json={"task": "volcano"},
        headers={"Authorization": f"Bearer {live.tokens['agent']}", **header},
        timeout=30,
    )
    assert r.status_code == 403 and r.json()["errors"][0]["extensions"]["code"] == "AGENT_BROWSER_REQUEST_REFUSED"
    # a member token may come from a browser
    r = live.gql(q, v, live.tokens["viewer"], headers=header)
    assert r.status_code == 200 and not r.json().get("errors")


async def test_agent_credentials_are_refused_from_browser_websockets(live):
    origin = live.url  # same origin: the handshake is accepted, the credential is not
    async with websockets.connect(live.ws_url, subprotocols=["graphql-transport-ws"], origin=origin) as ws:
        await ws_calls.init(ws, {"Authorization": f"Bearer {live.tokens['agent']}"})
        await ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": STREAM_QUERY, "variables": {"i": {"task": "volcano"}}},
                }
            )
        )
        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
        errors = msg["payload"] if msg["type"] == "error" else msg["payload"]["errors"]
        assert errors[0]["extensions"]["code"] == "AGENT_BROWSER_REQUEST_REFUSED"


async def test_cors_allow_list_for_member_browsers(tmp_path):
    from cairn.app.core.config import Settings
    from cairn.app.main import create_app

    app = create_app(Settings(data_dir=tmp_path, cors_origins=["https://ui.example"]))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://cairn") as client:
        ok = await client.options(
            "/graphql",
            headers={
                "Origin": "https://ui.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        assert ok.headers["access-control-allow-origin"] == "https://ui.example"
        bad = await client.options(
            "/graphql", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
        )
        assert "access-control-allow-origin" not in bad.headers


@pytest.mark.parametrize(
    "browser", [{"Sec-Fetch-Mode": "websocket"}, {"Sec-Fetch-Site": "same-origin"}, {"Origin": "SAME"}]
)
async def test_a_browser_handshake_with_an_agent_credential_is_refused_before_the_upgrade(live, browser):
    # it used to be upgraded (101) and only its operations refused; HTTP routes refuse it at once
    headers = {k: (live.url if v == "SAME" else v) for k, v in browser.items()}
    agent = {"Authorization": f"Bearer {live.tokens['agent']}"}
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        await websockets.connect(
            live.ws_url, subprotocols=["graphql-transport-ws"], additional_headers={**agent, **headers}
        )
    response = refused.value.response
    assert response.status_code == 403
    body = json.loads(response.body)
    assert body["errors"][0]["extensions"]["code"] == "AGENT_BROWSER_REQUEST_REFUSED"
    assert body["extensions"]["envelope"]["status"] == "REJECTED"
    # the same headers with a member token, and the agent credential without browser headers, upgrade
    member = {"Authorization": f"Bearer {live.tokens['viewer']}"}
    for handshake in ({**member, **headers}, agent):
        async with websockets.connect(
            live.ws_url, subprotocols=["graphql-transport-ws"], additional_headers=handshake
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "connection_ack"
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": "{ viewer { kind } }"}}))
            msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert msg["type"] == "next" and msg["payload"]["data"]["viewer"]["kind"] in ("member", "agent"), msg


def test_the_graphiql_page_cannot_be_framed_and_loads_only_its_own_assets(live):
    r = local_http.get(f"{live.url}/graphql", headers={"Accept": "text/html"}, timeout=10)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = {d.split()[0]: d.split()[1:] for d in r.headers["content-security-policy"].split("; ")}
    assert csp["frame-ancestors"] == ["'none'"] and csp["default-src"] == ["'none'"]
    assert csp["script-src"] == ["'self'"] and csp["connect-src"] == ["'self'"]
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer" and r.headers["cache-control"] == "no-store"
    assert "GraphiQL" in r.text
