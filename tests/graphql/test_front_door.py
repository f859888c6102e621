"""The front door on every channel (POST, GET, WebSocket): document limits before validation,
authentication before the document is read, and an envelope on every response and message."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from tests import local_http
from tests.graphql.pack_calls import error_of

LIMIT_MESSAGE = "fields once fragments are expanded; the limit is 10,000"
FRAGMENTS_QUERY = (
    "fragment Who on Viewer { kind workspaceId } fragment Me on Query { viewer { ...Who } } "
    "query Q { ...Me v2: viewer { ...Who } }"
)


def nested_fragments(n: int) -> str:
    """``n`` fragments, each spreading the previous one twice: 2^(n-1) selections expanded."""
    frags = ["fragment F0 on Query { __typename }"]
    frags += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, n)]
    return " ".join(frags) + f" query {{ ...F{n - 1} }}"


async def ws_session(live, payload: dict | None = None, **connect):
    """An acknowledged graphql-transport-ws connection (``connection_init`` with ``payload``)."""
    ws = await websockets.connect(live.ws_url, subprotocols=["graphql-transport-ws"], **connect)
    await ws.send(json.dumps({"type": "connection_init", "payload": payload or {}}))
    assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "connection_ack"
    return ws


async def ws_call(ws, op_id: str, query: str, variables: dict | None = None) -> list[dict]:
    """Send one operation and return its messages up to ``complete`` or ``error`` (10 s deadline
    per message: an exponential validation turns into a failure, not a hang)."""
    await ws.send(
        json.dumps({"id": op_id, "type": "subscribe", "payload": {"query": query, "variables": variables or {}}})
    )
    messages = []
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert msg.get("id") == op_id, msg
        messages.append(msg)
        if msg["type"] in ("complete", "error"):
            return messages


def auth(live, role: str = "agent") -> dict:
    return {"Authorization": f"Bearer {live.tokens[role]}"}


# ------------------------------------------------------------------ 1. document limits


@pytest.mark.parametrize("n", [18, 24, 30])
def test_nested_fragments_are_refused_on_post_and_get(live, n):
    doc = nested_fragments(n)
    r = local_http.post(f"{live.url}/graphql", json={"query": doc}, headers=auth(live), timeout=10)
    assert r.status_code == 400
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and LIMIT_MESSAGE in err["message"]
    assert r.json()["extensions"]["envelope"]["status"] == "ERROR"
    r = local_http.get(f"{live.url}/graphql", params={"query": doc}, headers=auth(live), timeout=10)
    assert r.status_code == 400 and LIMIT_MESSAGE in error_of(r)["message"]


@pytest.mark.parametrize("query_string", ["query=%7Bviewer%7Bkind%FF%7D%7D", "query=%C0%AF", "query=%E0%A4"])
def test_a_get_with_invalid_utf8_is_refused_not_repaired(live, query_string):
    # a POST body of invalid UTF-8 is refused; the GET path used to turn bad bytes into U+FFFD
    r = local_http.get(f"{live.url}/graphql?{query_string}", headers=auth(live), timeout=10)
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["extensions"]["code"] == "BAD_REQUEST" and "percent-encoded UTF-8" in err["message"]
    ok = local_http.get(f"{live.url}/graphql", params={"query": "{ viewer { kind } }"}, headers=auth(live), timeout=10)
    assert ok.status_code == 200 and ok.json()["data"]["viewer"]["kind"] == "agent"


async def test_nested_fragments_are_refused_over_the_websocket(live):
    ws = await ws_session(live, auth(live))
    try:
        for n in (18, 24, 30):
            [msg] = await ws_call(ws, f"n{n}", nested_fragments(n))
            assert msg["type"] == "error"
            err = msg["payload"][0]
            assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and LIMIT_MESSAGE in err["message"]
            assert err["extensions"]["envelope"]["status"] == "ERROR"
        # the connection is still usable afterwards
        msgs = await ws_call(ws, "ok", FRAGMENTS_QUERY)
        assert msgs[0]["payload"]["data"]["viewer"]["kind"] == "agent"
    finally:
        await ws.close()


def test_legitimate_fragments_and_refused_cycles(live):
    data = live.data(FRAGMENTS_QUERY, None, live.tokens["agent"])
    assert data["viewer"]["kind"] == "agent" and data["v2"] == data["viewer"]
    cyclic = "fragment A on Query { ...B } fragment B on Query { viewer { kind } ...A } query { ...A }"
    r = live.gql(cyclic, None, live.tokens["agent"])
    assert r.status_code == 400
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and "within itself" in err["message"]


def test_a_field_repeated_hundreds_of_times_is_refused_before_the_quadratic_rule(live):
    # within every other limit; graphql-core's field-merging rule took 220 ms on it
    r = live.gql("{" + " viewer { kind }" * 300 + "}", None, live.tokens["agent"])
    assert r.status_code == 400
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert err["message"].startswith("'viewer' is selected 300 times in one selection set")


# ------------------------------------------------------------------ 3. authentication first


@pytest.mark.parametrize(
    "payload", [{}, {"Authorization": "Bearer ck_0000000000000000_" + "A" * 43}, {"Authorization": "Bearer nonsense"}]
)
async def test_unauthenticated_websocket_operations_are_refused_before_their_document_is_read(live, payload):
    ws = await ws_session(live, payload)
    try:
        for i, query in enumerate(
            [
                "{ __schema { types { name fields { name } } } }",
                "{ viewr { kind } }",  # would be answered "Did you mean 'viewer'?"
                nested_fragments(30),
                'subscription { contextPackStream(input: {task: "x"}) { __typename } }',
            ]
        ):
            [msg] = await ws_call(ws, str(i), query)
            assert msg["type"] == "error", msg
            [err] = msg["payload"]
            assert err["extensions"]["code"] == "UNAUTHENTICATED", err
            assert err["extensions"]["envelope"]["status"] == "REJECTED"
            assert err["extensions"]["envelope"]["capability"] == "graphql:subscribe"
            assert "Did you mean" not in json.dumps(msg) and "__Schema" not in json.dumps(msg)
    finally:
        await ws.close()


async def test_http_and_websocket_refuse_the_unauthenticated_alike(live):
    r = await asyncio.to_thread(httpx.post, f"{live.url}/graphql", json={"query": "{ viewr { kind } }"}, timeout=10)
    assert r.status_code == 401 and error_of(r)["extensions"]["code"] == "UNAUTHENTICATED"
    assert "Did you mean" not in r.text
    # with a credential, both channels validate and may suggest
    r = await asyncio.to_thread(
        httpx.post, f"{live.url}/graphql", json={"query": "{ viewr { kind } }"}, headers=auth(live), timeout=10
    )
    assert "Did you mean 'viewer'" in error_of(r)["message"]
    ws = await ws_session(live, auth(live))
    try:
        [msg] = await ws_call(ws, "1", "{ viewr { kind } }")
        assert msg["type"] == "error" and "Did you mean 'viewer'" in msg["payload"][0]["message"]
        assert msg["payload"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    finally:
        await ws.close()


async def test_a_credential_revoked_on_an_open_socket_stops_at_the_next_operation(live):
    from tests.graphql.conftest import _agent

    token = await asyncio.to_thread(_agent, live, "ws-revoked", ["context:read"])
    ws = await ws_session(live, {"Authorization": f"Bearer {token}"})
    try:
        ok = await ws_call(ws, "1", "{ viewer { kind } }")
        assert ok[0]["payload"]["data"]["viewer"]["kind"] == "agent"
        await asyncio.to_thread(
            live.data,
            "mutation($id:ID!){revokeAgentCredential(id:$id){active}}",
            {"id": live.ids["cred:ws-revoked"]},
            live.tokens["owner"],
        )
        [msg] = await ws_call(ws, "2", "{ viewer { kind } }")
        assert msg["type"] == "error"
        assert msg["payload"][0]["extensions"]["code"] == "AGENT_CREDENTIAL_REVOKED"
        assert msg["payload"][0]["extensions"]["envelope"]["status"] == "REJECTED"
    finally:
        await ws.close()


async def test_the_legacy_graphql_ws_subprotocol_is_not_served(live):
    async with websockets.connect(live.ws_url, subprotocols=["graphql-ws"]) as ws:
        with pytest.raises(websockets.exceptions.ConnectionClosedError) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd.code == 4406


# ------------------------------------------------------------------ 5. one envelope per operation


async def test_each_websocket_operation_has_its_own_envelope(live):
    ws = await ws_session(live, auth(live))
    try:
        [invalid] = await ws_call(ws, "1", "{ viewer { nope } }")
        assert invalid["type"] == "error"
        env1 = invalid["payload"][0]["extensions"]["envelope"]
        assert env1["status"] == "ERROR" and env1["protocol"] == "cairn.envelope.v1"

        failed = await ws_call(ws, "2", 'query { document(id: "doc_missing") { id } }')
        assert [m["type"] for m in failed] == ["next", "complete"]
        assert failed[0]["payload"]["errors"][0]["extensions"]["code"] == "NOT_FOUND"
        env2 = failed[0]["payload"]["extensions"]["envelope"]
        assert env2["status"] == "ERROR" and env2["coordinate"] == "G1.U1.P1.Z2.A1" and "operations" not in env2

        ok = await ws_call(ws, "3", "{ viewer { kind } }")
        assert [m["type"] for m in ok] == ["next", "complete"]
        env3 = ok[0]["payload"]["extensions"]["envelope"]
        # before: status ERROR and operations [document ERROR, viewer OK] (the connection's calls)
        assert env3["status"] == "OK" and env3["coordinate"] == "G1.U1.P5.Z1.A1" and "operations" not in env3
        assert len({env1["id"], env2["id"], env3["id"]}) == 3
    finally:
        await ws.close()


async def test_a_caller_trace_id_on_the_handshake_reaches_every_operation(live):
    ws = await ws_session(live, auth(live), additional_headers={"x-cairn-trace": "trace_ws-front-door"})
    try:
        for op_id in ("a", "b"):
            msgs = await ws_call(ws, op_id, "{ viewer { kind } }")
            assert msgs[0]["payload"]["extensions"]["envelope"]["traceId"] == "trace_ws-front-door"
    finally:
        await ws.close()


# ------------------------------------------------------------------ 5. envelopes at the edges


def _assert_enveloped(r: httpx.Response, status: int, code: str, env_status: str = "ERROR") -> dict:
    assert r.status_code == status, r.text[:300]
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["data"] is None and body["errors"][0]["extensions"]["code"] == code
    env = body["extensions"]["envelope"]
    assert env["protocol"] == "cairn.envelope.v1" and env["status"] == env_status
    assert r.headers["x-cairn-trace"] == env["traceId"]
    return body


def test_unknown_routes_are_enveloped_404s(live):
    r = local_http.get(f"{live.url}/nope", headers={"x-cairn-trace": "trace_lost-1"}, timeout=10)
    body = _assert_enveloped(r, 404, "NOT_FOUND")
    assert "GET /nope" in body["errors"][0]["message"]
    assert body["extensions"]["envelope"]["traceId"] == "trace_lost-1"
    r = local_http.get(f"{live.url}/static/graphiql/missing.js", timeout=10)
    _assert_enveloped(r, 404, "NOT_FOUND")


def test_health_and_readiness_probes_carry_the_envelope(live):
    for path, coordinate in (("/healthz", "G1.U2.P8.Z1.A1"), ("/readyz", "G1.U2.P8.Z1.A2")):
        r = local_http.get(f"{live.url}{path}", headers={"x-cairn-trace": "trace_probe-1"}, timeout=10)
        env = r.json()["extensions"]["envelope"]
        assert r.status_code == 200 and r.headers["x-cairn-trace"] == env["traceId"] == "trace_probe-1"
        assert (env["status"], env["coordinate"]) == ("OK", coordinate)
    assert local_http.get(f"{live.url}/readyz", timeout=10).json()["ready"] is True


@pytest.mark.parametrize(
    "method,path,allowed",
    [
        ("GET", "/v1/context-packs/stream", "POST"),
        ("DELETE", "/graphql", "GET"),
        # /api/v1/decisions answers a wrong method in the Decisions wire format instead
        # (``method_not_allowed``; tests/graphql/test_decisions_wire.py)
    ],
)
def test_wrong_methods_are_enveloped_405s(live, method, path, allowed):
    r = local_http.request(method, f"{live.url}{path}", timeout=10)
    body = _assert_enveloped(r, 405, "METHOD_NOT_ALLOWED")
    assert allowed in r.headers["allow"] and f"{method} is not allowed on {path}" in body["errors"][0]["message"]


def test_strawberry_plain_text_refusals_are_enveloped(live):
    # GET /graphql without a query from a non-browser client: Strawberry's plain-text 400 before
    r = local_http.get(f"{live.url}/graphql", headers={"accept": "application/json"}, timeout=10)
    _assert_enveloped(r, 400, "BAD_REQUEST")


async def test_refused_websocket_handshakes_carry_an_envelope(live):
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        await websockets.connect(live.ws_url, subprotocols=["graphql-transport-ws"], origin="https://evil.example")
    response = refused.value.response
    assert response.status_code == 403
    body = json.loads(response.body)
    assert (
        body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        and "https://evil.example" in body["errors"][0]["message"]
    )
    env = body["extensions"]["envelope"]
    assert env["status"] == "REJECTED" and env["capability"] == "graphql:subscribe"
    assert response.headers["x-cairn-trace"] == env["traceId"]
    with pytest.raises(websockets.exceptions.InvalidStatus) as missing:
        await websockets.connect(live.ws_url.replace("/graphql", "/elsewhere"))
    assert missing.value.response.status_code == 404
    assert json.loads(missing.value.response.body)["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_cors_preflight_refusals_are_enveloped(tmp_path):
    from cairn.app.core.config import Settings
    from cairn.app.main import create_app

    app = create_app(Settings(data_dir=tmp_path, cors_origins=["https://app.example"]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cairn") as client:
        ok = await client.options(
            "/graphql", headers={"origin": "https://app.example", "access-control-request-method": "POST"}
        )
        assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://app.example"
        r = await client.options(
            "/graphql", headers={"origin": "https://evil.example", "access-control-request-method": "POST"}
        )
        body = _assert_enveloped(r, 403, "FORBIDDEN", env_status="REJECTED")
        assert "origin 'https://evil.example' is not allowed" in body["errors"][0]["message"]
        r = await client.options(
            "/graphql", headers={"origin": "https://app.example", "access-control-request-method": "DELETE"}
        )
        body = _assert_enveloped(r, 403, "FORBIDDEN", env_status="REJECTED")
        assert "method 'DELETE' is not allowed (allowed: GET, POST)" in body["errors"][0]["message"]


async def test_an_unhandled_error_is_an_enveloped_500_without_details(tmp_path):
    from starlette.routing import Route

    from cairn.app.core.config import Settings
    from cairn.app.main import create_app

    async def broken(_request):
        raise RuntimeError("secret internals /etc/passwd")

    app = create_app(Settings(data_dir=tmp_path))
    app.router.routes.append(Route("/broken", broken))  # a route that fails as a bug would
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://cairn") as client:
        r = await client.get("/broken", headers={"x-cairn-trace": "trace_boom-1"})
    body = _assert_enveloped(r, 500, "INTERNAL_SERVER_ERROR")
    assert body["errors"][0]["message"] == "internal error; quote trace id trace_boom-1 when reporting it"
    assert "secret" not in r.text and "Traceback" not in r.text
