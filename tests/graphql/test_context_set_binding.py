"""A credential bound to a context set, attacked on every channel (issue 13 items 3–4, issue 32
items 2–3): the refusal table of operations × channels (GraphQL over HTTP and over the
WebSocket, MCP over HTTP; MCP stdio in tests/db/test_mcp_stdio.py), what a bound credential
sees inside its set (lists and counts of the set only), and a check that the table names every
operation that takes ids or is refused, so a new read cannot be left out. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import secrets

import pytest

from cairn.app.governance.binding import BindingRule
from cairn.app.governance.registry import REGISTRY
from tests import local_http
from tests.graphql import ws_calls
from tests.graphql.pack_calls import _stream
from tests.graphql.test_context_set_packs import bound_token, pack
from tests.graphql.test_context_sets import make_set
from tests.graphql.test_mcp import call, session

REFUSED = "AGENT_CONTEXT_SET_SCOPE_REFUSED"
TINY_KN = """id: {kn}
name: Tiny colours
description: Two colours, to prove who may read a knowledge network.
source: {{kind: csv}}
object_types:
  - id: colour
    name: Colour
    description: A colour with a name.
    sql: SELECT ColourID, Name FROM colours
    primary_key: [ColourID]
    properties:
      - {{name: ColourID, type: integer}}
      - {{name: Name, type: string, full_text: true, vector: true}}
"""
SECRET_TITLE = "Merger plan Zanzibar"


@pytest.fixture(scope="module")
def world(live) -> dict:
    """A set over the handbook plus one finance document (``cfo``), a credential bound to it, a
    second set, a collection wholly outside (one document), a passage outside, a tiny network."""
    owner = live.tokens["owner"]
    w: dict = {}
    w["set"] = make_set(
        live,
        scope={"collectionIds": [live.ids["coll:handbook"]], "documentIds": [live.ids["doc:cfo"]]},
    )
    w["other"] = make_set(live)
    w["token"] = bound_token(live, w["set"]["id"], ("context:read", "queries:run", "memory:read"))
    name = f"secret-{secrets.token_hex(3)}"
    w["secret"] = live.data("mutation($n:String!){createCollection(name:$n){id}}", {"n": name}, owner)[
        "createCollection"
    ]["id"]
    w["secretDoc"] = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {"i": {"collectionId": w["secret"], "externalId": "zanzibar", "title": SECRET_TITLE, "text": "Buy Globex."}},
        owner,
    )["upsertDocument"]["documentId"]
    items = pack(
        live,
        {"task": "Mount Etna volcano", "retrieval": "LEXICAL", "filters": {"documentIds": [live.ids["doc:volcano"]]}},
    )["items"]
    w["passage"] = items[0]["citation"]["passageId"]
    w["kn"] = f"tiny{secrets.token_hex(3)}"
    live.data(
        "mutation($m:String!, $files:[CsvFileInput!]){loadKnowledgeNetwork(mapping:$m, files:$files){knId}}",
        {
            "m": TINY_KN.format(kn=w["kn"]),
            "files": [{"name": "colours.csv", "content": "ColourID,Name\n1,Vermilion\n2,Cerulean\n"}],
        },
        owner,
    )
    return w


# (operation, query, variables builder); every one must be refused to the bound credential
GQL_REFUSALS = [
    ("fields", "query($c:ID!){fields(collectionId:$c){name}}", lambda live, w: {"c": live.ids["coll:finance"]}),
    (
        "queryFields",
        'query($c:ID!){queryFields(plan:{collectionId:$c, fields:["x"]}){incomplete}}',
        lambda live, w: {"c": live.ids["coll:finance"]},
    ),
    ("document", "query($id:ID!){document(id:$id){id title}}", lambda live, w: {"id": live.ids["doc:volcano"]}),
    (
        "documents",
        "query($c:ID!){documents(collectionId:$c){totalCount documents{id title}}}",
        lambda live, w: {"c": w["secret"]},
    ),
    (
        "contextPack",
        "query($i:ContextPackInput!){contextPack(input:$i){packId}}",
        lambda live, w: {"i": {"task": "volcano", "filters": {"collectionIds": [w["secret"]]}}},
    ),
    (
        "contextPack",
        "query($i:ContextPackInput!){contextPack(input:$i){packId}}",
        lambda live, w: {"i": {"task": "volcano", "filters": {"documentIds": [live.ids["doc:volcano"]]}}},
    ),
    (
        "contextPack",
        "query($i:ContextPackInput!){contextPack(input:$i){packId}}",
        lambda live, w: {"i": {"task": "volcano", "contextSetId": w["other"]["id"]}},
    ),
    ("contextSet", "query($id:ID){contextSet(contextSetId:$id){id}}", lambda live, w: {"id": w["other"]["id"]}),
    (
        "lookupDefinitions",
        'query($id:ID){lookupDefinitions(term:"API",contextSetId:$id){score}}',
        lambda live, w: {"id": w["other"]["id"]},
    ),
    (
        "matchVerifiedAnswers",
        'query($id:ID){matchVerifiedAnswers(question:"invoices",contextSetId:$id){score}}',
        lambda live, w: {"id": w["other"]["id"]},
    ),
    (
        "contextSetVersions",
        "query($id:ID!){contextSetVersions(contextSetId:$id){number}}",
        lambda live, w: {"id": w["other"]["id"]},
    ),
    ("queryTemplates", "query($id:ID){queryTemplates(contextSetId:$id){id}}", lambda live, w: {"id": w["other"]["id"]}),
    (
        "runQueryTemplate",
        'query($id:ID){runQueryTemplate(templateId:"qt_x", contextSetId:$id){rowCount}}',
        lambda live, w: {"id": w["other"]["id"]},
    ),
    (
        "recallMemories",
        'query($c:ID){recallMemories(input:{query:"plans", collectionId:$c}){memories{memory{id}}}}',
        lambda live, w: {"c": w["secret"]},
    ),
    (
        "listMemories",
        "query($c:ID){listMemories(input:{collectionId:$c}){memories{id}}}",
        lambda live, w: {"c": w["secret"]},
    ),
    ("knowledgeNetworks", "query{knowledgeNetworks{id name}}", lambda live, w: {}),
    (
        "objectTypes",
        "query($kn:String!){objectTypes(knId:$kn){objectTypes{id}}}",
        lambda live, w: {"kn": w["kn"]},
    ),
    (
        "objectInstances",
        'query($kn:String!){objectInstances(knId:$kn, otId:"colour"){totalCount rows}}',
        lambda live, w: {"kn": w["kn"]},
    ),
    (
        "semanticRecall",
        'query($kn:String!){semanticRecall(knId:$kn, query:"vermilion"){nodes{properties}}}',
        lambda live, w: {"kn": w["kn"]},
    ),
]

# (tool, arguments builder); the MCP tools over streamable HTTP
MCP_REFUSALS = [
    ("get_passage", lambda live, w: {"passageId": w["passage"]}),
    ("get_section", lambda live, w: {"passageId": w["passage"], "before": 1}),
    (
        "get_citation",
        lambda live, w: {"documentId": live.ids["doc:volcano"], "start": 0, "end": 5, "sha256": "0" * 64},
    ),
    ("context_pack", lambda live, w: {"task": "volcano", "filters": {"collectionIds": [w["secret"]]}}),
    ("context_pack", lambda live, w: {"task": "volcano", "contextSetId": w["other"]["id"]}),
    ("lookup_definitions", lambda live, w: {"term": "API", "contextSetId": w["other"]["id"]}),
    ("match_verified_answers", lambda live, w: {"question": "invoices", "contextSetId": w["other"]["id"]}),
    ("list_fields", lambda live, w: {"collectionId": live.ids["coll:finance"]}),
    ("query_fields", lambda live, w: {"collectionId": live.ids["coll:finance"], "fields": ["x"]}),
    ("run_query_template", lambda live, w: {"templateId": "qt_x", "contextSetId": w["other"]["id"]}),
    ("recall", lambda live, w: {"query": "plans", "collectionId": w["secret"]}),
    ("object_instances", lambda live, w: {"knId": w["kn"], "otId": "colour"}),
    ("semantic_recall", lambda live, w: {"knId": w["kn"], "query": "vermilion"}),
    ("list_knowledge_networks", lambda live, w: {}),
    ("list_object_types", lambda live, w: {"knId": w["kn"]}),
    ("list_query_templates", lambda live, w: {"contextSetId": w["other"]["id"]}),
]

LEAKS = ("Vermilion", "Cerulean", SECRET_TITLE, "Mount Etna", "Tiny colours")
"""Strings that must never appear in a refused answer (rows, titles, passage text, network names)."""


async def ws_call(live, query: str, variables: dict, token: str) -> dict:
    """One operation over graphql-transport-ws: the payload of its first ``next`` (``data`` and
    ``errors``) or ``{"errors": …}`` of an ``error`` message."""
    async with ws_calls.acked(live.ws_url, token) as ws:
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query, "variables": variables}}))
        msg = await ws_calls.recv_json(ws, waiting_for="the operation's first answer")
        return {"errors": msg["payload"]} if msg["type"] == "error" else msg["payload"]


def _assert_refused(where: str, body: dict) -> None:
    assert body.get("errors"), (where, body)
    assert body["errors"][0]["extensions"]["code"] == REFUSED, (where, body["errors"][0])
    assert not any(v for v in (body.get("data") or {}).values()), (where, body["data"])
    text = json.dumps(body)
    assert not [s for s in LEAKS if s in text], (where, text)


def test_graphql_refusals_over_http_and_websocket(live, world):
    tok = world["token"]
    for name, q, var in GQL_REFUSALS:
        r = live.gql(q, var(live, world), tok)
        assert r.status_code == 403, (name, r.status_code, r.text)
        _assert_refused(f"HTTP {name}", r.json())
        _assert_refused(f"WS {name}", asyncio.run(ws_call(live, q, var(live, world), tok)))


@pytest.mark.both_backends  # lists and counts filtered in SQL
def test_outside_documents_leak_no_ids_titles_or_count(live, world):
    """Issue 32 item 2, as an attacker would ask: the refusal carries no id, title or count."""
    q = "query($c:ID!){documents(collectionId:$c){totalCount documents{id title}}}"
    r = live.gql(q, {"c": world["secret"]}, world["token"])
    assert r.status_code == 403
    e = r.json()["errors"][0]
    assert (e["extensions"]["code"], e["extensions"]["field"]) == (REFUSED, "collectionId")
    assert world["secretDoc"] not in r.text and SECRET_TITLE not in r.text and "totalCount" not in r.text
    body = asyncio.run(ws_call(live, q, {"c": world["secret"]}, world["token"]))
    assert body["errors"][0]["extensions"]["code"] == REFUSED and world["secretDoc"] not in json.dumps(body)
    # the owner sees the document: the refusal is the binding, not a missing collection
    assert live.data(q, {"c": world["secret"]}, live.tokens["owner"])["documents"]["totalCount"] == 1


def test_mcp_refusals_over_http(live, world):
    for name, args in MCP_REFUSALS:
        r = call(live, world["token"], name, args(live, world))
        assert r.isError, (name, r.structuredContent)
        assert r.structuredContent["error"]["code"] == REFUSED, (name, r.structuredContent)
        assert not [s for s in LEAKS if s in json.dumps(r.structuredContent)], name


async def test_streams_refuse_outside_the_set(live, world):
    tok = world["token"]
    events = await _stream(live, {"i": {"task": "volcano", "filters": {"collectionIds": [world["secret"]]}}}, tok)
    assert events[0]["__error__"][0]["extensions"]["code"] == REFUSED
    r = local_http.post(
        f"{live.url}/v1/context-packs/stream",
        json={"task": "volcano", "filters": {"documentIds": [live.ids["doc:volcano"]]}},
        headers={"Authorization": f"Bearer {tok}"},
        timeout=60,
    )
    assert r.status_code == 403 and r.json()["errors"][0]["extensions"]["code"] == REFUSED


@pytest.mark.both_backends  # lists and counts filtered in SQL
def test_inside_the_set_lists_and_counts_only_the_set(live, world):
    tok = world["token"]
    # finance holds one document of the set (cfo) and one outside it (volcano): only cfo, counted 1
    q = "query($c:ID!){documents(collectionId:$c){totalCount documents{id title}}}"
    page = live.data(q, {"c": live.ids["coll:finance"]}, tok)["documents"]
    assert page["totalCount"] == 1 and [d["id"] for d in page["documents"]] == [live.ids["doc:cfo"]]
    assert live.data(q, {"c": live.ids["coll:finance"]}, live.tokens["owner"])["documents"]["totalCount"] == 2
    handbook = live.data(q, {"c": live.ids["coll:handbook"]}, tok)["documents"]["totalCount"]
    assert handbook == live.data(q, {"c": live.ids["coll:handbook"]}, live.tokens["owner"])["documents"]["totalCount"]
    colls = {
        c["name"]: c["documentCount"] for c in live.data("{collections{name documentCount}}", None, tok)["collections"]
    }
    assert colls == {"handbook": handbook, "finance": 1}
    listed = call(live, tok, "list_collections", {}).structuredContent["collections"]
    assert {c["name"]: c["documentCount"] for c in listed} == colls  # MCP discovery: the set's only
    assert live.data("query($id:ID!){document(id:$id){id}}", {"id": live.ids["doc:cfo"]}, tok)["document"]
    assert [s["id"] for s in live.data("{contextSets{id}}", None, tok)["contextSets"]] == [world["set"]["id"]]
    assert live.data("{viewer{id}}", None, tok)["viewer"]["id"]
    p = pack(live, {"task": "Mount Etna volcano in Sicily; invoices generated", "retrieval": "LEXICAL"}, tok)
    assert p["items"][0]["kind"] == "VERIFIED_ANSWER"  # the bound set by default
    assert {i["collectionId"] for i in p["items"]} <= {None, live.ids["coll:handbook"], live.ids["coll:finance"]}
    assert all(i["citation"] is None or i["citation"]["documentId"] != live.ids["doc:volcano"] for i in p["items"])
    r = call(live, tok, "get_citation", {"documentId": live.ids["doc:cfo"], "start": 0, "end": 5, "sha256": "0" * 64})
    assert not r.isError and r.structuredContent["status"] == "CHANGED"


def test_tools_list_hides_what_the_binding_refuses_outright(live, world):
    """tools/list of the bound credential (context:read, queries:run, memory:read): no ontology
    tool (refused to every bound credential), everything else its scopes open."""

    async def go():
        async with session(live, world["token"]) as s:
            return {t.name for t in (await s.list_tools()).tools}

    listed = asyncio.run(go())
    ontology = {"list_knowledge_networks", "list_object_types", "object_instances", "semantic_recall"}
    assert not listed & ontology
    assert {"context_pack", "list_collections", "list_query_templates", "run_query_template", "recall"} <= listed


def test_the_table_names_every_operation_that_takes_ids_or_is_refused():
    """A new read that names collections, documents, passages or sets (or is refused to bound
    credentials) must join this table, so its binding is proved on the wire, not only declared."""
    need = {
        n
        for n, op in REGISTRY.items()
        if op.agent_callable
        and op.effect == "read"
        and op.kind in ("query", "mcp")
        and (op.binding.rule is BindingRule.REFUSED or op.binding.paths)
    }
    covered = {n for n, *_ in GQL_REFUSALS} | {f"mcp.{n}" for n, _ in MCP_REFUSALS}
    assert need - covered == set()
