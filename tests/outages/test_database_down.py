"""Issue 32 item 17: a stopped PostgreSQL is a coded 503 on every channel, and ``/readyz`` says so.

A real ``cairn serve`` process on a PostgreSQL of the test's own (:func:`own_postgres`, never the
machine's): while the database is stopped, GraphQL over HTTP and over WebSocket, the NDJSON pack
stream, MCP over HTTP and the Decision API answer ``DATABASE_UNAVAILABLE`` — HTTP 503 with
``Retry-After`` on the HTTP channels, the code in the WebSocket ``error`` message — where they
answered 400/500 ``INTERNAL_SERVER_ERROR``; ``/readyz`` answers 503 naming the database. Started
again, the same calls succeed and ``/readyz`` is 200, without a restart. ``CAIRN_EMBEDDER=none``:
the model plays no part in an outage and would only add a minute of loading.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets

from cairn.app.core.migrate import upgrade_database
from tests import local_http
from tests.graphql.conftest import _bootstrap
from tests.outages.conftest import serve
from tests.workers.test_workers import stop, wait_ready

pytestmark = pytest.mark.slow  # a `cairn serve` process and a PostgreSQL cluster of its own

COLLECTIONS = "{ collections { id name } }"


def _post_graphql(url: str, token: str) -> httpx.Response:
    return local_http.post(
        f"{url}/graphql", json={"query": COLLECTIONS}, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


async def _ws_error(ws_url: str, token: str) -> dict:
    """One operation over graphql-transport-ws; its ``error`` (or ``next``) message."""
    async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"]) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "connection_ack"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": COLLECTIONS}}))
        return json.loads(await asyncio.wait_for(ws.recv(), 30))


def _assert_unavailable(r, where: str) -> dict:
    assert r.status_code == 503, (where, r.status_code, r.text)
    assert r.headers.get("retry-after") == "2", (where, dict(r.headers))
    return r.json()


def test_database_down_is_503_database_unavailable_everywhere_and_readyz_follows(own_postgres, tmp_path):
    upgrade_database(own_postgres.url)
    tokens, _ids = asyncio.run(_bootstrap(own_postgres.url))
    owner = tokens["owner"]
    w = serve("pgdown", tmp_path / "data", CAIRN_DATABASE_URL=own_postgres.url, CAIRN_EMBEDDER="none")
    try:
        wait_ready(w, timeout=240)
        assert _post_graphql(w.url, owner).status_code == 200

        own_postgres.stop()
        ws_url = w.url.replace("http://", "ws://") + "/graphql"
        auth = {"Authorization": f"Bearer {owner}"}

        body = _assert_unavailable(_post_graphql(w.url, owner), "POST /graphql")
        assert body["errors"][0]["extensions"]["code"] == "DATABASE_UNAVAILABLE", body
        assert body["errors"][0]["extensions"]["retryAfter"] == 2
        assert "database is unavailable" in body["errors"][0]["message"]
        assert "127.0.0.1" not in body["errors"][0]["message"]  # no host or port to the client

        msg = asyncio.run(_ws_error(ws_url, owner))
        assert msg["type"] == "error", msg
        assert msg["payload"][0]["extensions"]["code"] == "DATABASE_UNAVAILABLE", msg

        r = local_http.post(f"{w.url}/v1/context-packs/stream", json={"task": "vpn"}, headers=auth, timeout=30)
        body = _assert_unavailable(r, "NDJSON stream")
        assert body["errors"][0]["extensions"]["code"] == "DATABASE_UNAVAILABLE", body

        mcp_headers = {**auth, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
        r = local_http.post(
            f"{w.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=mcp_headers, timeout=30
        )
        body = _assert_unavailable(r, "POST /mcp")
        assert body["errors"][0]["extensions"]["code"] == "DATABASE_UNAVAILABLE", body

        r = local_http.get(f"{w.url}/api/v1/decisions/dec_missing", headers=auth, timeout=30)
        body = _assert_unavailable(r, "GET /api/v1/decisions/{id}")
        assert body["error"]["code"] == "DATABASE_UNAVAILABLE", body

        deadline = time.monotonic() + 10  # /readyz's live checks are cached for a second
        while (status := w.readyz()[0]) == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        status, ready = w.readyz()
        assert status == 503 and ready["ready"] is False, ready
        assert ready["database"] != "ok" and "database" in ready["reason"], ready

        own_postgres.start()
        deadline = time.monotonic() + 30
        while (status := w.readyz()[0]) != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status == 200
        assert w.readyz()[1]["database"] == "ok"
        r = _post_graphql(w.url, owner)
        assert r.status_code == 200 and not r.json().get("errors"), r.text
        assert asyncio.run(_ws_error(ws_url, owner))["type"] == "next"
    finally:
        stop(w)
