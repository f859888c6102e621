"""Browsers (SPEC §9): agent credentials are refused from browsers on HTTP, the NDJSON route and
websockets, member tokens are not; the CORS allow-list for member browsers."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from tests import local_http
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
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {live.tokens['agent']}"}})
        )
        await ws.recv()
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
