"""The library, fact, template and gap tools over streamable HTTP (live server, SQLite) with the SDK's own client: each answers what its GraphQL operation answers, and is
refused with the same codes (scope, limits, not found); context gaps are stored and listed to
editors, paged; an unknown JSON-RPC method is -32601.
"""

from __future__ import annotations

import asyncio

import pytest

from cairn.app.core.db import Database
from cairn.app.identity import service as identity
from tests import factories, local_http
from tests.graphql.conftest import _agent
from tests.graphql.test_context_sets import make_set
from tests.graphql.test_mcp import ENVELOPE_META, call

GAPS = "query($f:Int!,$a:String){contextGaps(first:$f, after:$a){totalCount endCursor hasNextPage gaps{id task missing reporterKind credentialId credentialName memberId packId traceId createdAt}}}"
REPORT = "mutation($i:ContextGapInput!){reportContextGap(input:$i){id task missing reporterKind credentialId}}"


def _gql_error(live, token, query, variables=None) -> dict:
    body = live.gql(query, variables, token).json()
    assert body.get("errors"), body
    return body["errors"][0]["extensions"]


def _err(result) -> dict:
    assert result.isError, result.structuredContent
    return result.structuredContent["error"]


ACME = [
    ("cfo-2019", "Jane Doe was appointed CFO of Acme Corp in 2019.", "2019-01-01T00:00:00Z"),
    ("cfo-2024", "On 1 July 2024, Acme Corp named John Roe as its new CFO.", "2024-07-01T00:00:00Z"),
]


async def _workspace(url: str) -> dict[str, str]:
    db = Database(url)
    out: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="mcplib")
            for role in ("owner", "editor", "viewer"):
                m, out[role] = await factories.member(s, workspace_id=ws.id, role=role, name=f"{role}-mcplib")
                out[f"member:{role}"] = m.id
                if role == "owner":
                    owner = factories.member_principal(m)
            for name, scopes in (("gaps", ["gaps:report"]), ("reader", ["context:read"])):
                c, out[name] = await factories.credential(s, creator=owner, scopes=scopes, name=f"mcplib-{name}")
                out[f"cred:{name}"] = c.id
    finally:
        await db.dispose()
    return out


@pytest.fixture(scope="module")
def lib(live) -> dict[str, str]:
    """A workspace of its own (``mcplib``): members, a reader and a gaps:report credential, and
    two statements about Acme Corp's CFO."""
    t = asyncio.run(_workspace(live.settings.resolved_database_url))
    coll = live.data('mutation{createCollection(name:"acme"){id}}', token=t["owner"])["createCollection"]["id"]
    for ext, text, valid_from in ACME:
        live.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
            {
                "i": {
                    "collectionId": coll,
                    "externalId": ext,
                    "title": "Acme Corp",
                    "text": text,
                    "validFrom": valid_from,
                }
            },
            t["owner"],
        )
    t["collection"] = coll
    return t


@pytest.fixture(scope="module")
def tokens(live, lib) -> dict[str, str]:
    return {
        "reader": live.tokens["agentReadOnly"],  # context:read
        "queries": live.tokens["agent"],  # context:read queries:run replay:run
        "gaps": _agent(live, "mcp-gaps", ["gaps:report"]),
        "lib-reader": lib["reader"],
        "lib-gaps": lib["gaps"],
    }


def test_context_set_tools_answer_as_graphql(live, tokens):
    s = make_set(live)
    reader = tokens["reader"]
    r = call(live, reader, "search_context_sets", {"query": "billing handbook", "limit": 50})
    assert not r.isError, r.structuredContent
    found = {x["id"]: x for x in r.structuredContent["contextSets"]}
    gql = live.data('{contextSets(query:"billing handbook", limit:50){id}}', token=reader)["contextSets"]
    assert list(found) == [x["id"] for x in gql] and s["id"] in found
    mine = found[s["id"]]
    assert mine["instructions"] == ["Cite the document you used.", "Answer in the language of the question."]
    assert mine["counts"] == {"verifiedAnswers": 3, "definitions": 3, "requiredEvidence": 1}
    assert r.meta[ENVELOPE_META]["coordinate"] == "G1.U3.P1.Z3.A1"

    d = call(live, reader, "lookup_definitions", {"term": "rank fusion", "contextSetId": s["id"]})
    (hit,) = d.structuredContent["definitions"]
    assert (hit["term"], hit["score"], hit["trust"]) == ("RRF", 1.0, "APPROVED")
    gql = live.data(
        'query($s:ID){lookupDefinitions(term:"rank fusion", contextSetId:$s){score definition{id}}}',
        {"s": s["id"]},
        reader,
    )["lookupDefinitions"]
    assert [(g["definition"]["id"], g["score"]) for g in gql] == [(hit["id"], hit["score"])]

    m = call(
        live, reader, "match_verified_answers", {"question": "When are invoices generated?", "contextSetId": s["id"]}
    )
    top = m.structuredContent["verifiedAnswers"][0]
    assert top["answer"].startswith("Nightly at two o'clock")
    assert top["citation"] == {"documentId": live.ids["doc:dedup-a"], "passageId": None}
    assert 0.99 <= top["coverage"] <= 1.0

    # the limits and codes of the GraphQL operations
    r = call(live, reader, "lookup_definitions", {"term": "x" * 201})
    gql = _gql_error(live, reader, "query($t:String!){lookupDefinitions(term:$t){score}}", {"t": "x" * 201})
    assert (_err(r)["code"], _err(r)["field"], _err(r)["limit"]) == (gql["code"], gql["field"], gql["limit"])
    r = call(live, reader, "search_context_sets", {"limit": 51})
    assert (_err(r)["field"], _err(r)["limit"]) == ("limit", "1-50")
    r = call(live, tokens["gaps"], "match_verified_answers", {"question": "invoices"})
    assert _err(r)["code"] == "AGENT_SCOPE_MISSING"


def test_fact_tools_are_cited_and_verify(live, tokens):
    reader = tokens["lib-reader"]
    t = call(live, reader, "timeline", {"subject": "Acme Corp"})
    assert not t.isError, t.structuredContent
    facts = t.structuredContent["facts"]
    gql = live.data('{timeline(subject:"Acme Corp"){id text}}', token=reader)["timeline"]
    assert [f["id"] for f in facts] == [g["id"] for g in gql]
    assert [(f["holder"], f["text"]) for f in facts] == [("Jane Doe", ACME[0][1]), ("John Roe", ACME[1][1])]
    old, new = facts
    assert old["interval"]["validTo"] == "2024-07-01T00:00:00+00:00" and old["endedBy"] == new["id"]
    # each statement is its cited span: the citation verifies against the document's text
    c = new["citation"]
    v = call(live, reader, "get_citation", {k: c[k] for k in ("documentId", "versionId", "start", "end", "sha256")})
    assert (v.structuredContent["status"], v.structuredContent["currentText"]) == ("VERIFIED", new["text"])
    assert (c["externalId"], c["documentTitle"], c["collectionName"]) == ("cfo-2024", "Acme Corp", "acme")
    now = call(live, reader, "current_facts", {"subject": "Acme Corp"}).structuredContent["facts"]
    assert [(f["relation"], f["holder"], f["since"]) for f in now] == [
        ("chief financial officer", "John Roe", "2024-07-01T00:00:00+00:00")
    ]
    then = call(live, reader, "current_facts", {"subject": "Acme Corp", "asOf": {"validTime": "2022-06-01T00:00:00Z"}})
    assert [f["holder"] for f in then.structuredContent["facts"]] == ["Jane Doe"]

    r = call(live, reader, "timeline", {"subject": "Acme Corp", "limit": 0})
    assert (_err(r)["code"], _err(r)["field"], _err(r)["limit"]) == ("BAD_USER_INPUT", "limit", "1-500")
    r = call(live, reader, "timeline", {"subject": "Acme Corp", "from": "2024-01-01T00:00:00"})
    assert _err(r)["field"] == "from"
    r = call(live, tokens["lib-gaps"], "current_facts", {"subject": "Acme Corp"})
    assert _err(r)["code"] == "AGENT_SCOPE_MISSING"


def test_field_tools_refuse_like_graphql(live, tokens):
    reader = tokens["reader"]
    coll = live.ids["coll:handbook"]
    r = call(live, reader, "list_fields", {"collectionId": coll})
    assert not r.isError and r.structuredContent == {"fields": []}
    r = call(live, reader, "query_fields", {"collectionId": coll, "fields": []})
    gql = _gql_error(
        live, reader, "query($c:ID!){queryFields(plan:{collectionId:$c, fields:[]}){incomplete}}", {"c": coll}
    )
    assert (_err(r)["code"], _err(r)["field"], gql["field"]) == ("FIELD_QUERY_NO_FIELDS", "fields", "plan.fields")
    assert gql["code"] == "FIELD_QUERY_NO_FIELDS"
    r = call(live, reader, "query_fields", {"collectionId": coll, "fields": ["a", "b", "c", "d", "e", "f", "g"]})
    assert (_err(r)["code"], _err(r)["limit"]) == ("FIELD_QUERY_TOO_MANY_FIELDS", 6)
    r = call(live, reader, "query_fields", {"collectionId": coll, "fields": ["party"]})
    assert _err(r)["code"] == "FIELD_NOT_DEFINED"
    r = call(live, reader, "list_fields", {"collectionId": "col_missing"})
    assert _err(r)["code"] == _gql_error(live, reader, '{fields(collectionId:"col_missing"){name}}')["code"]
    r = call(live, tokens["gaps"], "query_fields", {"collectionId": coll, "fields": ["party"]})
    assert _err(r)["code"] == "AGENT_SCOPE_MISSING"


def test_run_query_template_is_governed_like_graphql(live, tokens):
    r = call(live, tokens["reader"], "run_query_template", {"templateId": "qt_missing"})
    assert (
        _err(r)["code"]
        == "AGENT_SCOPE_MISSING"
        == _gql_error(live, tokens["reader"], '{runQueryTemplate(templateId:"qt_missing"){rowCount}}')["code"]
    )
    r = call(live, tokens["queries"], "run_query_template", {"templateId": "qt_missing"})
    assert _err(r)["code"] == "NOT_FOUND"
    r = call(live, tokens["queries"], "run_query_template", {"templateId": "qt_missing", "parameters": [1]})
    gql = _gql_error(live, tokens["queries"], '{runQueryTemplate(templateId:"qt_missing", parameters:[1]){rowCount}}')
    assert (
        (_err(r)["code"], _err(r)["field"]) == (gql["code"], gql["field"]) == ("QUERY_PARAMETER_INVALID", "parameters")
    )
    assert r.meta[ENVELOPE_META]["capability"] == "query_template:run"


def test_context_gaps_are_reported_stored_and_listed_to_editors(live, tokens, lib):
    # outside the scope: the same code on both channels
    args = {"task": "Summarise the 2024 travel policy", "missing": "No document covers travel after 2023."}
    r = call(live, lib["reader"], "report_context_gap", args)
    gql = _gql_error(live, lib["reader"], REPORT, {"i": args})
    assert _err(r)["code"] == gql["code"] == "AGENT_SCOPE_MISSING"
    # limits: coded, naming the field and the limit
    long = {**args, "task": "t" * 4001}
    r = call(live, lib["gaps"], "report_context_gap", long)
    gql = _gql_error(live, lib["gaps"], REPORT, {"i": long})
    assert (_err(r)["code"], _err(r)["field"], _err(r)["limit"]) == (gql["code"], "task", gql["limit"])
    assert (gql["code"], gql["field"], gql["limit"]) == ("CONTEXT_GAP_TEXT_TOO_LONG", "input.task", 4000)
    r = call(live, lib["gaps"], "report_context_gap", {**args, "missing": "m" * 2001})
    assert (_err(r)["code"], _err(r)["field"], _err(r)["limit"]) == ("CONTEXT_GAP_TEXT_TOO_LONG", "missing", 2000)
    r = call(live, lib["gaps"], "report_context_gap", {**args, "missing": " \n "})
    assert (_err(r)["code"], _err(r)["field"]) == ("BAD_USER_INPUT", "missing")
    # nothing refused was stored
    assert live.data(GAPS, {"f": 5}, lib["editor"])["contextGaps"]["totalCount"] == 0
    # reported over MCP, with a pack and trace id
    r = call(live, lib["gaps"], "report_context_gap", {**args, "packId": "pack_123", "traceId": "trace_abc"})
    assert not r.isError, r.structuredContent
    gap = r.structuredContent["gap"]
    assert gap["id"].startswith("gap_") and gap["reporterKind"] == "agent"
    assert r.meta[ENVELOPE_META]["coordinate"] == "G1.U3.P1.Z8.A1"
    # and over GraphQL by a member
    second = live.data(REPORT, {"i": {"task": "Who is the CFO?", "missing": "The 2025 board minutes."}}, lib["viewer"])
    assert second["reportContextGap"]["reporterKind"] == "member"
    # editors list them, newest first, one page at a time
    page = live.data(GAPS, {"f": 1}, lib["editor"])["contextGaps"]
    assert (page["totalCount"], page["hasNextPage"]) == (2, True)
    assert [g["id"] for g in page["gaps"]] == [second["reportContextGap"]["id"]]
    assert page["gaps"][0]["memberId"] == lib["member:viewer"] and page["gaps"][0]["credentialId"] is None
    rest = live.data(GAPS, {"f": 200, "a": page["endCursor"]}, lib["editor"])["contextGaps"]
    assert (len(rest["gaps"]), rest["hasNextPage"], rest["endCursor"]) == (1, False, None)
    (stored,) = rest["gaps"]
    assert (stored["id"], stored["task"], stored["missing"], stored["packId"], stored["traceId"]) == (
        gap["id"],
        args["task"],
        args["missing"],
        "pack_123",
        "trace_abc",
    )
    assert (stored["credentialId"], stored["credentialName"]) == (lib["cred:gaps"], "mcplib-gaps")
    assert stored["memberId"] == lib["member:owner"]  # the credential's creator
    # another workspace sees none of them
    assert all(g["id"] != gap["id"] for g in live.data(GAPS, {"f": 200}, live.tokens["editor"])["contextGaps"]["gaps"])
    # only editors and above list; agents never
    assert _gql_error(live, lib["viewer"], GAPS, {"f": 5})["code"] == "FORBIDDEN"
    assert _gql_error(live, lib["gaps"], GAPS, {"f": 5})["code"] == "AGENT_OPERATION_NOT_ALLOWED"
    e = _gql_error(live, lib["editor"], GAPS, {"f": 0})
    assert (e["code"], e["field"], e["limit"]) == ("PAGE_SIZE_OUT_OF_RANGE", "first", 200)
    e = _gql_error(live, lib["editor"], GAPS, {"f": 5, "a": "not-a-cursor"})
    assert (e["code"], e["field"]) == ("INVALID_CURSOR", "after")


def test_an_unknown_method_is_method_not_found_and_bad_params_name_the_parameter(live, tokens):
    h = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {tokens['reader']}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    r = local_http.post(
        f"{live.url}/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/explode"}, headers=h, timeout=30
    )
    body = r.json()
    assert (body["id"], body["error"]["code"]) == (7, -32601)
    assert "tools/explode" in body["error"]["message"]
    # a known method with bad params is -32602, naming the parameter
    for i, (params, field, words) in enumerate(
        [
            (5, "params", "valid dictionary"),
            ({"arguments": {}}, "params.name", "Field required"),
            ({"name": "context_pack", "arguments": [1]}, "params.arguments", "valid dictionary"),
        ]
    ):
        body = {"jsonrpc": "2.0", "id": 8 + i, "method": "tools/call", "params": params}
        error = local_http.post(f"{live.url}/mcp", json=body, headers=h, timeout=30).json()["error"]
        assert (error["code"], error["data"]["field"]) == (-32602, field), error
        assert field in error["message"] and words in error["message"] and "tools/call" in error["message"]
    # (what the SDK takes still passes: every other MCP test calls tools through the SDK's client)


def test_query_fields_over_mcp_answers_with_verifiable_citations(live, lib):
    from tests.db.test_fields import NDAS
    from tests.graphql.test_fields import FIELDS, PLAN_Q

    owner, reader = lib["owner"], lib["reader"]
    coll = live.data('mutation{createCollection(name:"ndas"){id}}', token=owner)["createCollection"]["id"]
    for ext, text in NDAS.items():
        live.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
            {"i": {"collectionId": coll, "externalId": ext, "title": ext, "text": text}},
            owner,
        )
    live.data(
        "mutation($c:ID!,$f:[FieldDefinitionInput!]!){defineFields(collectionId:$c, fields:$f)}",
        {"c": coll, "f": FIELDS},
        owner,
    )
    live.data("mutation($c:ID!){extractFields(collectionId:$c){documents}}", {"c": coll}, owner)
    listed = call(live, reader, "list_fields", {"collectionId": coll}).structuredContent["fields"]
    gql = live.data("query($c:ID!){fields(collectionId:$c){name type coverage}}", {"c": coll}, reader)["fields"]
    assert [(f["name"], f["type"], f["coverage"]) for f in listed] == [
        (g["name"], g["type"], g["coverage"]) for g in gql
    ]
    plan = {
        "collectionId": coll,
        "fields": ["party", "jurisdiction", "term"],
        "filters": [
            {"field": "jurisdiction", "op": "EQ", "value": "Delaware"},
            {"field": "term", "op": "GT", "value": "2 years"},
        ],
    }
    r = call(live, reader, "query_fields", plan)
    assert not r.isError, r.structuredContent
    res = r.structuredContent
    want = live.data(PLAN_Q, {"p": plan}, reader)["queryFields"]
    assert [x["externalId"] for x in res["rows"]] == [x["externalId"] for x in want["rows"]] == ["acme.txt"]
    assert (res["matched"], res["incomplete"]) == (want["matched"], want["incomplete"])
    (row,) = res["rows"]
    assert [(v["field"], v["value"]) for v in row["values"]] == [
        (v["field"], v["value"]) for v in want["rows"][0]["values"]
    ]
    juris = next(v for v in row["values"] if v["field"] == "jurisdiction")
    c = juris["citation"]
    # the span is in the cited version's text; sha256 is the cited passage's (as GraphQL's FieldCitation)
    doc = live.data("query($id:ID!){document(id:$id){versions{id text}}}", {"id": c["documentId"]}, reader)
    text = {x["id"]: x["text"] for x in doc["document"]["versions"]}[c["versionId"]]
    assert text[c["start"] : c["end"]] == "Delaware"
    passage = call(live, reader, "get_passage", {"passageId": c["passageId"]}).structuredContent["passage"]
    assert passage["citation"]["sha256"] == c["sha256"] and "Delaware" in passage["text"]
