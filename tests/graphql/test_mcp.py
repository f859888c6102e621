"""MCP tools over streamable HTTP (``POST /mcp`` on the live server, SQLite) with
the official SDK's own client: listing, packs with verifiable citations, passages, memory, and
refusals with the same codes as GraphQL.

A workspace of its own (``mcpco``: memory on, a small corpus) keeps workspace A untouched.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from cairn.app.core.db import Database
from cairn.app.governance import REGISTRY
from cairn.app.identity import service as identity
from cairn.app.mcp import ENVELOPE_META, TOOLS
from tests import factories, local_http
from tests.graphql.conftest import _agent

DOCS = [
    (
        "rivers",
        "Rivers",
        "The Danube flows through ten countries, from the Black Forest in Germany past Vienna, Bratislava, "
        "Budapest and Belgrade, and finally ends in a wide delta on the coast of the Black Sea.\n\n"
        "The Rhine rises in the Swiss Alps, forms part of the border between Switzerland and Germany, flows "
        "north past Basel, Strasbourg and Cologne, and reaches the North Sea near Rotterdam.\n\n"
        "The Loire is the longest river entirely in France; it rises in the Massif Central and flows north and "
        "then west past Orleans, Tours and Nantes before it reaches the Atlantic Ocean.",
    ),
    ("mountains", "Mountains", "Mont Blanc is the highest mountain of the Alps, on the French-Italian border."),
]


async def _workspace(url: str) -> dict[str, str]:
    db = Database(url)
    out: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="mcpco")
            m, t = await identity.create_member(s, workspace_id=ws.id, name="owner-mcp", role="owner")
            out["owner"] = t.token
            creator = factories.member_principal(m)
            _c, out["full"] = await factories.credential(
                s, creator=creator, name="mcp-full", scopes=["context:read", "memory:read", "memory:write"]
            )
            _c, out["readonly"] = await factories.credential(s, creator=creator, name="mcp-ro", scopes=["context:read"])
    finally:
        await db.dispose()
    return out


@pytest.fixture(scope="module")
def mcpco(live) -> dict[str, str]:
    """Tokens and ids of the ``mcpco`` workspace (memory on, two documents)."""
    t = asyncio.run(_workspace(live.settings.resolved_database_url))
    live.data("mutation{setMemorySettings(enabled:true, retentionDays:30){enabled}}", token=t["owner"])
    coll = live.data('mutation{createCollection(name:"geo"){id}}', token=t["owner"])["createCollection"]["id"]
    t["collection"] = coll
    for ext, title, text in DOCS:
        r = live.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId versionId}}",
            {"i": {"collectionId": coll, "externalId": ext, "title": title, "text": text}},
            t["owner"],
        )["upsertDocument"]
        t[f"doc:{ext}"], t[f"ver:{ext}"] = r["documentId"], r["versionId"]
    return t


@asynccontextmanager
async def session(live, token: str | None, headers: dict[str, str] | None = None):
    """An initialized SDK client session over streamable HTTP with a bearer token."""
    h = {**(headers or {})}
    if token:
        h["Authorization"] = f"Bearer {token}"
    async with (
        httpx.AsyncClient(headers=h, timeout=120) as http,
        streamable_http_client(f"{live.url}/mcp", http_client=http) as (read, write, _),
        # a deadline on each answer: the SDK waits for ever by default, and the run with it
        ClientSession(read, write, read_timeout_seconds=timedelta(seconds=120)) as s,
    ):
        await s.initialize()
        yield s


def call(live, token: str, name: str, arguments: dict, meta: dict | None = None):
    async def go():
        async with session(live, token) as s:
            return await s.call_tool(name, arguments, meta=meta)

    return asyncio.run(go())


def test_every_mcp_operation_is_a_tool_and_back():
    ops = {n for n, op in REGISTRY.items() if op.kind == "mcp"}
    assert ops == {t.op_name for t in TOOLS.values()}
    for t in TOOLS.values():
        assert REGISTRY[t.op_name].coordinate.startswith("G1.U3.")


def test_tools_are_listed_with_described_schemas(live, mcpco):
    async def go():
        async with session(live, mcpco["readonly"]) as s:
            return (await s.list_tools()).tools

    tools = {t.name: t for t in asyncio.run(go())}
    # context:read: every read of the corpus, nothing that writes or needs another scope
    assert set(tools) == {n for n, t in TOOLS.items() if REGISTRY[t.op_name].scope == "context:read"}
    budget = tools["context_pack"].inputSchema["properties"]["budget"]["properties"]["maxTokens"]
    assert (budget["minimum"], budget["maximum"]) == (256, 32000)
    assert "cl100k_base" in budget["description"]
    assert tools["context_pack"].inputSchema["required"] == ["task"]


def test_pack_cites_spans_that_verify_and_read_back(live, mcpco):
    token = mcpco["readonly"]
    r = call(live, token, "context_pack", {"task": "Where does the Rhine reach the sea?", "retrieval": "LEXICAL"})
    assert not r.isError, r.structuredContent
    pack = r.structuredContent
    assert pack["items"] and pack["tokensUsed"] > 0 and pack["packId"]
    env = r.meta[ENVELOPE_META]
    assert (env["coordinate"], env["capability"], env["status"]) == ("G1.U3.P1.Z1.A1", "context:pack", "OK")
    assert env["traceId"] == pack["traceId"]
    top = pack["items"][0]
    assert "Rhine" in top["text"]
    c = top["citation"]
    assert c["documentId"] == mcpco["doc:rivers"]
    # the span verifies against the current text ...
    v = call(live, token, "get_citation", {k: c[k] for k in ("documentId", "versionId", "start", "end", "sha256")})
    assert v.structuredContent["status"] == "VERIFIED" and v.structuredContent["currentText"] == top["text"]
    # ... and a wrong hash does not
    bad = call(live, token, "get_citation", {**{k: c[k] for k in ("documentId", "start", "end")}, "sha256": "0" * 64})
    assert bad.structuredContent["status"] == "CHANGED"
    # the passage reads back with the same span; its section has the neighbours in order
    p = call(live, token, "get_passage", {"passageId": c["passageId"]}).structuredContent["passage"]
    core = ("documentId", "versionId", "passageId", "start", "end", "sha256")
    assert (p["text"], {k: p["citation"][k] for k in core}) == (top["text"], {k: c[k] for k in core})
    assert p["externalId"] == "rivers"
    sec = call(live, token, "get_section", {"passageId": c["passageId"], "before": 1, "after": 1}).structuredContent
    spans = [x["citation"] for x in sec["passages"]]
    assert len(spans) == 3 and {k: spans[1][k] for k in core} == {k: c[k] for k in core}
    assert spans[0]["end"] <= spans[1]["start"] and spans[1]["end"] <= spans[2]["start"]
    assert [x["ordinal"] for x in sec["passages"]] == sorted(x["ordinal"] for x in sec["passages"])


def test_remember_then_recall(live, mcpco):
    token = mcpco["full"]
    r = call(live, token, "remember", {"namespace": "trips", "key": "river", "text": "The user prefers the Loire."})
    assert not r.isError, r.structuredContent
    mem = r.structuredContent["memory"]
    assert (mem["type"], mem["evidence"], mem["trust"]) == ("memory", False, "UNTRUSTED")
    assert r.meta[ENVELOPE_META]["coordinate"] == "G1.U3.P9.Z1.A1"
    rec = call(live, token, "recall", {"query": "Which river does the user prefer?"}).structuredContent
    assert [m["memory"]["id"] for m in rec["memories"]][:1] == [mem["id"]]
    gone = call(live, token, "forget", {"memoryId": mem["id"]}).structuredContent
    assert gone == {"deleted": 1}


def _gql_error(live, token, query, variables=None) -> dict:
    body = live.gql(query, variables, token).json()
    return body["errors"][0]["extensions"]


def test_refusals_carry_the_graphql_codes(live, mcpco):
    # outside the credential's scopes: same code as rememberMemory over GraphQL
    r = call(live, mcpco["readonly"], "remember", {"namespace": "n", "text": "a note"})
    assert r.isError
    err = r.structuredContent["error"]
    gql = _gql_error(
        live, mcpco["readonly"], 'mutation{rememberMemory(input:{namespace:"n", text:"a note"}){superseded}}'
    )
    assert err["code"] == gql["code"] == "AGENT_SCOPE_MISSING"
    assert r.meta[ENVELOPE_META]["status"] == "REJECTED"
    assert err["traceId"] == r.meta[ENVELOPE_META]["traceId"]
    # a limit: same code, field and limit as contextPack
    r = call(live, mcpco["readonly"], "context_pack", {"task": "rivers", "budget": {"maxTokens": 100}})
    err = r.structuredContent["error"]
    gql = _gql_error(live, mcpco["readonly"], '{contextPack(input:{task:"rivers", budget:{maxTokens:100}}){packId}}')
    assert (err["code"], err["limit"]) == (gql["code"], gql["limit"])
    # the field is the path in the tool's arguments, GraphQL's in its input object
    assert (err["field"], gql["field"], err["limit"]) == ("budget.maxTokens", "input.budget.maxTokens", "256-32000")
    # the wrong type is refused before anything runs, naming the field
    r = call(live, mcpco["readonly"], "recall", {"query": 5})
    assert (r.structuredContent["error"]["code"], r.structuredContent["error"]["field"]) == (
        "BAD_USER_INPUT",
        "query",
    )
    # another workspace's document is not found
    r = call(live, live.tokens["agent"], "get_passage", {"passageId": "psg_nope"})
    assert r.structuredContent["error"]["code"] == "NOT_FOUND"


def test_http_needs_a_valid_credential(live, mcpco):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    h = {"Accept": "application/json, text/event-stream"}
    r = local_http.post(f"{live.url}/mcp", json=body, headers=h, timeout=30)
    assert r.status_code == 401
    assert r.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert r.json()["extensions"]["envelope"]["coordinate"] == "G1.U2.P8.Z4.A1"
    r = local_http.post(
        f"{live.url}/mcp",
        json=body,
        headers={**h, "Authorization": f"Bearer {mcpco['readonly']}", "Origin": "https://evil.example"},
        timeout=30,
    )
    assert r.status_code == 403
    assert r.json()["errors"][0]["extensions"]["code"] == "AGENT_BROWSER_REQUEST_REFUSED"


def test_boundaries_apply_and_confirm_through_meta(live):
    args = {"task": "reciprocal rank fusion", "retrieval": "LEXICAL"}
    hard = _agent(live, "mcp-hard", ["context:read"], profile={"hardBoundaries": ["context:pack"]})
    r = call(live, hard, "context_pack", args)
    assert r.structuredContent["error"]["code"] == "BOUNDARY_BLOCKED"
    assert r.meta[ENVELOPE_META]["boundary"]["decision"] == "BLOCKED"
    token = _agent(live, "mcp-re", ["context:read"], profile={"reconfirmBefore": ["context:pack"]})
    r = call(live, token, "context_pack", args)
    err = r.structuredContent["error"]
    assert err["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"
    confirmation = err["boundary"]["confirmationToken"]
    ok = call(live, token, "context_pack", args, meta={"cairn/confirmation": confirmation})
    assert not ok.isError and ok.meta[ENVELOPE_META]["boundary"]["confirmed"] is True
    again = call(live, token, "context_pack", args, meta={"cairn/confirmation": confirmation})
    assert again.structuredContent["error"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"  # single use


def test_unknown_tool_is_a_coded_error(live, mcpco):
    r = call(live, mcpco["readonly"], "no_such_tool", {})
    assert r.isError and (r.structuredContent["error"]["code"], r.structuredContent["error"]["field"]) == (
        "BAD_USER_INPUT",
        "name",
    )


def test_ontology_and_decision_tools_refuse_like_graphql(live, mcpco):
    token = mcpco["readonly"]
    r = call(live, token, "object_instances", {"knId": "nope", "otId": "thing"})
    gql = _gql_error(live, token, '{objectInstances(knId:"nope", otId:"thing"){totalCount}}')
    assert (r.structuredContent["error"]["code"], r.structuredContent["error"].get("field")) == (
        gql["code"],
        gql.get("field"),
    )
    r = call(live, token, "semantic_recall", {"knId": "nope", "query": "orders"})
    gql = _gql_error(live, token, '{semanticRecall(knId:"nope", query:"orders"){message}}')
    assert r.structuredContent["error"]["code"] == gql["code"]
    r = call(live, token, "create_decision", {"state": {"a": 1}, "questions": []})
    assert r.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"
