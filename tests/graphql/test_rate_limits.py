"""Per-credential rate limits through the real server (SQLite and PostgreSQL), with tiny limits.

The limits count per fixed minute window. The server's limiter reads a fixed clock
(:data:`NOW`, 30 s into its window; ``RateLimiter(clock=…)``), so every call of a test falls
into one window and ``retryAfter`` is exactly 30: no test waits for a fresh window (that wait,
up to 20 s before each of 12 tests on each database: ~3.4 s a test expected, 80 s a run). Each test counts
against credentials of its own. Window boundaries and the reset in the next window are tested on
the limiter itself with a settable clock (tests/db/test_rate_limits.py, both databases).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from cairn.app.context import bootstrap
from cairn.app.core.config import Settings
from cairn.app.core.db import Database
from cairn.app.core.migrate import upgrade_database
from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
from cairn.app.governance.rate_limits import RateLimiter
from cairn.app.governance.registry import capabilities_for_scopes
from cairn.app.identity import service as identity
from tests import local_http
from tests.conftest import drop_postgres_database, postgres_database
from tests.graphql import ws_calls
from tests.graphql.conftest import Live, _start

pytestmark = pytest.mark.both_backends  # the per-minute counters live in SQL

LIMITS = {
    "rate_limit_packs_per_minute": 3,
    "rate_limit_decisions_per_minute": 2,
    "rate_limit_writes_per_minute": 4,
    "rate_limit_reads_per_minute": 5,
}
PACK = '{ contextPack(input: {task: "billing region", retrieval: LEXICAL}) { packId } }'
AGENTS = ("a", "b", "burst", "decider", "ws", "typename", "documents", "mcp", "wsshape", "refused", "mcprefused")
SCOPES = ["context:read", "decisions:run"]
NOW = 1_800_000_030.0
"""The limiter's fixed clock (Unix seconds): 30 s into a minute window, so ``retryAfter`` = 30."""
RETRY_AFTER = 30
MESSAGE = re.compile(r"^at most (\d+) (packs|decisions|writes|reads) per minute per credential; retry after (\d+) s$")


async def _bootstrap(url: str) -> dict[str, str]:
    db = Database(url)
    tokens: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="limited")
            m, t = await identity.create_member(s, workspace_id=ws.id, name="owner", role="owner")
            owner = Principal(
                kind="member",
                id=m.id,
                workspace_id=ws.id,
                permissions=ROLE_PERMISSIONS["owner"],
                member_id=m.id,
                role="owner",
            )
            _m, t = await identity.create_member(s, workspace_id=ws.id, name="admin", role="admin")
            tokens["admin"] = t.token
            for name in AGENTS:
                _c, t = await identity.create_credential(
                    s,
                    creator=owner,
                    name=name,
                    scopes=SCOPES,
                    expires_in_days=5,
                    default_capabilities=capabilities_for_scopes(set(SCOPES)),
                )
                tokens[name] = t.token
    finally:
        await db.dispose()
    return tokens


@pytest.fixture(scope="module")
def limited(backend, tmp_path_factory) -> Live:
    """A server with limits 3 packs, 2 decisions, 4 writes, 5 reads per minute (no embedder),
    whose limiter reads the fixed clock :data:`NOW`."""
    pg_url = postgres_database() if backend == "postgres" else None
    settings = Settings(
        data_dir=tmp_path_factory.mktemp(f"limited-{backend}"), database_url=pg_url, embedder="none", **LIMITS
    )
    upgrade_database(settings.resolved_database_url)
    tokens = asyncio.run(_bootstrap(settings.resolved_database_url))
    services = bootstrap(settings)
    services = dataclasses.replace(services, rate_limiter=RateLimiter(services.rate_limiter.limits, clock=lambda: NOW))
    server, thread, port = _start(settings, services)
    try:
        yield Live(backend, f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/graphql", settings, tokens)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        if pg_url:
            drop_postgres_database(pg_url)


def assert_limited(r: httpx.Response, rate_class: str, limit: int) -> None:
    """A 429 ``RATE_LIMITED`` naming the class and limit, with a matching ``Retry-After``."""
    assert r.status_code == 429, r.text
    retry = r.headers["retry-after"]
    assert retry == str(RETRY_AFTER)
    body = r.json()
    if body.get("type") == "error":  # the Decision API's wire format (seeds/003)
        wire = body["error"]
        assert wire["type"] == "rate_limit_error"
        err = {
            "message": wire["message"],
            "extensions": {
                "code": wire["code"],
                "rateClass": wire["rate_class"],
                "limit": wire["limit"],
                "retryAfter": wire["retry_after"],
            },
        }
    else:
        err = body["errors"][0]
    assert err["extensions"]["code"] == "RATE_LIMITED"
    assert (err["extensions"]["rateClass"], err["extensions"]["limit"]) == (rate_class, limit)
    assert err["extensions"]["retryAfter"] == int(retry)
    m = MESSAGE.match(err["message"])
    assert m and m.groups() == (str(limit), rate_class, retry), err["message"]
    assert body["extensions"]["envelope"]["status"] == "ERROR"


def stream(live: Live, token: str) -> httpx.Response:
    return local_http.post(
        f"{live.url}/v1/context-packs/stream",
        json={"task": "billing region", "retrieval": "LEXICAL"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def test_packs_over_the_limit_are_429_on_graphql_and_the_stream_route(limited):
    token = limited.tokens["a"]
    for _ in range(2):
        assert limited.gql(PACK, token=token).status_code == 200
    r = stream(limited, token)  # the NDJSON route counts against the same class
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    assert_limited(stream(limited, token), "packs", 3)
    assert_limited(limited.gql(PACK, token=token), "packs", 3)
    assert limited.data("{ viewer { kind } }", token=token)["viewer"]["kind"] == "agent"  # reads: own class
    assert limited.gql(PACK, token=limited.tokens["b"]).json()["data"]["contextPack"]["packId"]  # own counter


def test_a_concurrent_burst_of_limit_plus_five_passes_exactly_the_limit(limited):
    token = limited.tokens["burst"]
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: limited.gql(PACK, token=token), range(3 + 5)))
    passed = [r for r in responses if r.status_code == 200 and not r.json().get("errors")]
    refused = [r for r in responses if r.status_code == 429]
    assert (len(passed), len(refused)) == (3, 5)
    for r in refused:
        assert_limited(r, "packs", 3)


def test_the_decisions_route_and_mutation_share_the_decisions_limit(limited):
    token = limited.tokens["decider"]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for _ in range(2):  # counted once authorised, even though the body is then refused
        r = local_http.post(
            f"{limited.url}/api/v1/decisions", content=b'{"state": {}, "questions": []}', headers=headers, timeout=60
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_decision_input"
    r = local_http.post(
        f"{limited.url}/api/v1/decisions", content=b'{"state": {}, "questions": []}', headers=headers, timeout=60
    )
    assert_limited(r, "decisions", 2)
    r = limited.gql("mutation { createDecision(input: {state: {a: 1}, questions: []}) { id } }", token=token)
    assert_limited(r, "decisions", 2)
    sid = limited.data('mutation { createSession(title: "t") { id } }', token=token)["createSession"]["id"]
    assert sid  # writes: own class


def test_member_tokens_are_limited_per_member(limited):
    token = limited.tokens["admin"]
    for _ in range(5):
        assert limited.data("{ viewer { kind } }", token=token)["viewer"]["kind"] == "member"
    assert_limited(limited.gql("{ viewer { kind } }", token=token), "reads", 5)
    created = limited.data('mutation { createCollection(name: "c1") { id } }', token=token)  # writes: own class
    assert created["createCollection"]["id"]


async def test_the_subscription_counts_as_packs_over_the_websocket(limited):
    token = limited.tokens["ws"]
    assert (await asyncio.to_thread(limited.gql, PACK, token=token)).status_code == 200
    assert (await asyncio.to_thread(limited.gql, PACK, token=token)).status_code == 200
    query = 'subscription { contextPackStream(input: {task: "billing", retrieval: LEXICAL}) { __typename } }'
    outcomes = []
    async with ws_calls.acked(limited.ws_url, token) as ws:
        for op_id in ("1", "2"):  # the third pack passes, the fourth is refused
            await ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": {"query": query}}))
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if msg["type"] == "complete":
                    outcomes.append("complete")
                    break
                if msg["type"] == "error" or msg["payload"].get("errors"):
                    errors = msg["payload"] if msg["type"] == "error" else msg["payload"]["errors"]
                    outcomes.append(errors[0])
                    break
    assert outcomes[0] == "complete"
    ext = outcomes[1]["extensions"]
    assert (ext["code"], ext["rateClass"], ext["limit"]) == ("RATE_LIMITED", "packs", 3)
    assert ext["retryAfter"] == RETRY_AFTER


def test_a_burst_of_typename_documents_reaches_the_reads_limit(limited):
    # a document selecting only __typename runs no governed field; it used to pass unmetered
    # (1,260 calls in 9.6 s, all 200): now each counts one read, like any other read
    token = limited.tokens["typename"]
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: limited.gql("{ __typename }", token=token), range(5 + 3)))
    passed = [r for r in responses if r.status_code == 200 and r.json()["data"] == {"__typename": "Query"}]
    refused = [r for r in responses if r.status_code == 429]
    assert (len(passed), len(refused)) == (5, 3)
    for r in refused:
        assert_limited(r, "reads", 5)


async def test_introspection_and_refused_documents_count_as_reads_on_http_and_websocket(limited):
    token = limited.tokens["documents"]
    introspection = "{ __schema { queryType { name } } }"
    r = await asyncio.to_thread(limited.gql, introspection, token=token)
    assert r.status_code == 200 and r.json()["data"]["__schema"]["queryType"]["name"] == "Query"
    r = await asyncio.to_thread(limited.gql, "{ viewer { nosuchfield } }", token=token)  # validation refuses it
    assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    too_many = " ".join(f"query q{i} {{ __typename }}" for i in range(399))  # the document-size limit refuses it
    r = await asyncio.to_thread(limited.gql, too_many, token=token)
    assert r.status_code == 400 and "operations per document" in r.json()["errors"][0]["message"]
    r = await asyncio.to_thread(limited.gql, "{ viewer { kind }", token=token)  # a syntax error
    assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    outcomes = []
    async with ws_calls.acked(limited.ws_url, token) as ws:
        for op_id in ("1", "2"):  # read 5 passes, the sixth is refused
            await ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": {"query": "{ __typename }"}}))
            msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
            outcomes.append(msg["payload"]["data"] if msg["type"] == "next" else msg["payload"][0])
            if msg["type"] == "next":
                assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "complete"
    assert outcomes[0] == {"__typename": "Query"}
    ext = outcomes[1]["extensions"]
    assert (ext["code"], ext["rateClass"], ext["limit"]) == ("RATE_LIMITED", "reads", 5)
    assert_limited(await asyncio.to_thread(limited.gql, introspection, token=token), "reads", 5)
    assert_limited(await asyncio.to_thread(limited.gql, too_many, token=token), "reads", 5)
    assert_limited(await asyncio.to_thread(limited.gql, "{ viewer { kind }", token=token), "reads", 5)


def mcp(live: Live, token: str, method: str, params: dict | None = None, rpc_id: int | None = 1) -> httpx.Response:
    message: dict = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
    if rpc_id is not None:
        message["id"] = rpc_id
    return local_http.post(
        f"{live.url}/mcp",
        json=message,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        timeout=60,
    )


def test_every_mcp_request_counts_as_a_read_and_a_tool_call_counts_once(limited):
    # tools/list, ping and notifications used to pass unmetered (1,300 tools/list + 100 ping,
    # all 200); now each POST /mcp counts one read, and a tools/call only its own class
    token = limited.tokens["mcp"]
    r = mcp(limited, token, "tools/call", {"name": "search_context_sets", "arguments": {}})
    assert r.status_code == 200 and not r.json()["result"].get("isError"), r.text  # read 1 (not 2)
    assert mcp(limited, token, "tools/list", rpc_id=2).status_code == 200  # read 2
    assert mcp(limited, token, "ping", rpc_id=3).json()["result"] == {}  # read 3
    assert mcp(limited, token, "notifications/initialized", rpc_id=None).status_code == 202  # read 4
    assert mcp(limited, token, "resources/list", rpc_id=4).json()["id"] == 4  # read 5 (the SDK's -32601)
    for method, rpc_id in (("tools/list", 5), ("ping", 6), ("notifications/initialized", None)):
        r = mcp(limited, token, method, rpc_id=rpc_id)
        assert r.status_code == 429, r.text
        body = r.json()
        assert (body["id"], body["error"]["code"]) == (rpc_id, -32000)
        data = body["error"]["data"]
        assert (data["code"], data["rateClass"], data["limit"]) == ("RATE_LIMITED", "reads", 5)
        assert data["retryAfter"] == int(r.headers["retry-after"]) == RETRY_AFTER
        assert MESSAGE.match(body["error"]["message"]) and data["message"] == body["error"]["message"]
    r = mcp(limited, token, "tools/call", {"name": "search_context_sets", "arguments": {}}, rpc_id=7)
    err = r.json()["result"]["structuredContent"]["error"]  # a refused tool call: the same coded error
    assert (err["code"], err["rateClass"], err["limit"]) == ("RATE_LIMITED", "reads", 5)
    assert_limited(limited.gql("{ __typename }", token=token), "reads", 5)


async def test_a_refused_governed_field_and_a_refused_document_get_the_same_websocket_error(limited):
    # over the limit, { viewer { kind } } (refused by its governed field) arrived as `next` with
    # errors, { __typename } (refused before execution) as `error`: both are now `error` messages
    # (docs/api.md "Rate limits"), with no `complete` after them (graphql-transport-ws)
    token = limited.tokens["wsshape"]
    for _ in range(5):
        assert (await asyncio.to_thread(limited.gql, "{ __typename }", token=token)).status_code == 200
    messages = []
    async with ws_calls.acked(limited.ws_url, token) as ws:
        for op_id, query in (("1", "{ viewer { kind } }"), ("2", "{ __typename }"), ("3", "{ viewer { kind } }")):
            await ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": {"query": query}}))
            messages.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
    assert [(m["id"], m["type"]) for m in messages] == [("1", "error"), ("2", "error"), ("3", "error")]
    shapes = []
    for m in messages:
        (err,) = m["payload"]
        ext = err["extensions"]
        assert (ext["code"], ext["rateClass"], ext["limit"]) == ("RATE_LIMITED", "reads", 5), err
        assert ext["retryAfter"] == RETRY_AFTER and MESSAGE.match(err["message"])
        assert ext["envelope"]["status"] == "ERROR"
        shapes.append(sorted(set(err) - {"locations", "path"}) + sorted(ext))
    assert shapes[0] == shapes[1] == shapes[2]


def test_refused_bodies_on_the_http_routes_count_as_reads(limited):
    # a body refused after authentication by the route's parser or validation used to cost no
    # rate limit, so a credential could send them unmetered; each now counts one read, like a
    # refused GraphQL document (the Decision API parses its body after the decisions count)
    token = limited.tokens["refused"]

    def bad_stream() -> httpx.Response:
        return local_http.post(
            f"{limited.url}/v1/context-packs/stream",
            json={"retrieval": "LEXICAL"},
            headers={"Authorization": f"Bearer {token}"},
        )

    for _ in range(5):  # reads 1-5
        r = bad_stream()
        assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["field"] == "input.task", r.text
    assert_limited(bad_stream(), "reads", 5)
    assert_limited(limited.gql("{ __typename }", token=token), "reads", 5)


def test_mcp_tool_calls_refused_before_authorization_count_as_reads(limited):
    # a tools/call refused by its structural check or naming no tool used to cost no rate limit
    token = limited.tokens["mcprefused"]

    def code(name: str, rpc_id: int) -> str:
        r = mcp(limited, token, "tools/call", {"name": name, "arguments": {}}, rpc_id=rpc_id)
        assert r.status_code == 200, r.text
        return r.json()["result"]["structuredContent"]["error"]["code"]

    assert [code("list_fields", i) for i in range(4)] + [code("no_such_tool", 4)] == ["BAD_USER_INPUT"] * 5
    assert [code("list_fields", 5), code("no_such_tool", 6)] == ["RATE_LIMITED"] * 2
    assert_limited(limited.gql("{ __typename }", token=token), "reads", 5)
