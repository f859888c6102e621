"""The operation × principal table (SPEC §1, §9): every GraphQL operation called by no one, each
member role and each agent scope, with the expected outcome and envelope; every stored profile
passes the contract check.

The table's outcome depends on the registry, the principal and the handler, not on a socket or
on the database engine, so it runs in this process on SQLite (tests/graphql/in_process.py: the
same ASGI app, gate, adapter and handlers the server runs, called through ``httpx.ASGITransport``)
in two ways:

- :func:`test_authorize_decides_every_refusal_of_the_table`: the authorisation function itself
  (:func:`app.governance.adapter.authorize`, with principals authenticated from tokens in the
  database) refuses exactly the refused cells with their codes and lets every other cell through;
- :func:`test_operation_by_principal`: each cell as a GraphQL call, asserting the code (or data)
  and the envelope, including the outcomes the handler decides (``NOT_FOUND``, memory disabled).

Each MCP tool is governed as the GraphQL operation it maps to (:data:`MCP_TWINS`):
:func:`test_mcp_tools_are_listed_and_refused_as_their_graphql_operation` checks, per principal,
that :func:`authorize` refuses the tool exactly where the table refuses its twin and that
``tools/list`` (:func:`app.mcp.server.visible_tools`, through
:func:`~app.governance.adapter.may_call`) lists exactly the tools it lets through.

One end-to-end call per outcome code and per channel (HTTP, WebSocket, NDJSON) through the live
server is in tests/graphql/test_governance_channels.py; MCP's refusals in tests/graphql/test_mcp.py.
"""

from __future__ import annotations

import pytest

from cairn.app.context import RequestContext
from cairn.app.core.errors import CairnError, to_response
from cairn.app.governance.adapter import authorize, may_call, status_of
from cairn.app.governance.registry import REGISTRY
from cairn.app.mcp.server import visible_tools
from tests.graphql.conftest import _bootstrap
from tests.graphql.in_process import InProcess, in_process_app
from tests.graphql.pack_calls import PACK

# ---------------------------------------------------------------------------------------------
# The operation × principal table. Each row: a minimal call, then the expected outcome per
# principal: "OK", or the error code. Allowed calls on ids that do not exist answer NOT_FOUND
# (they passed every governance check). Written out by hand, not derived from the registry.
# ---------------------------------------------------------------------------------------------

CALLS = {
    "contextPack": PACK,
    "document": ("query($id:ID!){document(id:$id){id}}", {"id": "@doc:volcano"}),
    "collections": ("{collections{id}}", {}),
    "replay": ('{replay(replayId:"rpl_missing", mode:VERIFY){replayId}}', {}),
    "timeline": ('{timeline(subject:"Volcano facts"){id}}', {}),
    "currentFacts": ('{currentFacts(subject:"Volcano facts"){id}}', {}),
    "viewer": ("{viewer{kind}}", {}),
    "operations": ("{operations{name}}", {}),
    "members": ("{members{id}}", {}),
    "agentCredentials": ("{agentCredentials{id}}", {}),
    "agentScopes": ("{agentScopes{name}}", {}),
    "createCollection": ('mutation{createCollection(name:"table-test"){id}}', {}),
    "upsertDocument": (
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
        {"i": {"collectionId": "@coll:handbook", "externalId": "table-test", "text": "table test document"}},
    ),
    "deleteDocument": ('mutation{deleteDocument(id:"doc_missing"){deletedAt}}', {}),
    "addMember": ('mutation{addMember(name:"table-member", role:"viewer"){token}}', {}),
    "setMemberRole": ('mutation{setMemberRole(memberId:"usr_missing", role:"viewer"){id}}', {}),
    "removeMember": ('mutation{removeMember(memberId:"usr_missing"){id}}', {}),
    "createAgentCredential": (
        'mutation{createAgentCredential(input:{name:"table", expiresInDays:1, scopes:["context:read"]}){token}}',
        {},
    ),
    "revokeAgentCredential": ('mutation{revokeAgentCredential(id:"0000000000000000"){id}}', {}),
    "setAgentProfile": ('mutation{setAgentProfile(id:"0000000000000000", profile:{suggestOnly:[]}){id}}', {}),
    "knowledgeNetworks": ("{knowledgeNetworks{id}}", {}),
    "objectTypes": ('{objectTypes(knId:"missing"){knId}}', {}),
    "objectInstances": ('{objectInstances(knId:"missing", otId:"x"){totalCount}}', {}),
    "semanticRecall": ('{semanticRecall(knId:"missing", query:"x"){message}}', {}),
    "loadKnowledgeNetwork": (
        'mutation($m:String!){loadKnowledgeNetwork(mapping:$m, files:[{name:"a.csv", content:"x\\n1\\n"}]){knId}}',
        {
            "m": "{id: tabletest, name: T, object_types: [{id: a, name: A, table: a, primary_key: [x], "
            "properties: [{name: x, type: integer}]}]}"
        },
    ),
    "startInteraction": ("mutation{startInteraction{interactionId}}", {}),
    # memory stays switched off in workspace A (tests/graphql/test_memory.py uses its own workspaces)
    "rememberMemory": ('mutation{rememberMemory(input:{namespace:"n", text:"table note"}){superseded}}', {}),
    "forgetMemory": ('mutation{forgetMemory(input:{memoryId:"mem_missing"}){deleted}}', {}),
    "recallMemories": ('query{recallMemories(input:{query:"table"}){hidden}}', {}),
    "listMemories": ("{listMemories{hidden}}", {}),
    "memorySettings": ("{memorySettings{enabled}}", {}),
    "setMemorySettings": ("mutation{setMemorySettings(enabled:false){enabled}}", {}),
    "deleteAllMemories": ("mutation{deleteAllMemories{deleted}}", {}),
    "createDecision": (
        'mutation{createDecision(input:{sessionId:"sess_missing", questions:[{type:CHOICE, '
        'instructions:"ok?", choices:[{value:true},{value:false}]}]}){id}}',
        {},
    ),
    "decision": ('{decision(id:"dec_missing"){id}}', {}),
    "createSession": ('mutation{createSession(title:"table"){id}}', {}),
    "appendSessionMessages": (
        'mutation{appendSessionMessages(sessionId:"sess_missing", messages:[{role:"user", content:"x"}]){id}}',
        {},
    ),
    "archiveSession": ('mutation{archiveSession(id:"sess_missing"){id}}', {}),
    "session": ('{session(id:"sess_missing"){id}}', {}),
    "sessions": ("{sessions{id}}", {}),
    # context sets and query templates (issue 13)
    "contextSets": ("{contextSets{id}}", {}),
    "contextSet": ('{contextSet(contextSetId:"cs_missing"){id}}', {}),
    "lookupDefinitions": ('{lookupDefinitions(term:"table"){score}}', {}),
    "matchVerifiedAnswers": ('{matchVerifiedAnswers(question:"table"){score}}', {}),
    "contextSetVersions": ('{contextSetVersions(contextSetId:"cs_missing"){number}}', {}),
    "createContextSet": (
        'mutation{createContextSet(input:{name:"table-set", scope:{collectionIds:["coll_missing"]}}){id}}',
        {},
    ),
    "updateContextSet": ('mutation{updateContextSet(id:"cs_missing", input:{description:"x"}){id}}', {}),
    "documents": ('{documents(collectionId:"col_missing", first:1){totalCount}}', {}),
    "fields": ('{fields(collectionId:"col_missing"){name}}', {}),
    "queryFields": ('{queryFields(plan:{collectionId:"col_missing", fields:["x"]}){incomplete}}', {}),
    "suggestFields": ('{suggestFields(collectionId:"col_missing"){label}}', {}),
    "defineFields": ('mutation{defineFields(collectionId:"col_missing", fields:[{name:"x", type:TEXT}])}', {}),
    "extractFields": ('mutation{extractFields(collectionId:"col_missing"){documents}}', {}),
    "labelFieldValue": ('mutation{labelFieldValue(documentId:"doc_missing", field:"x", values:["y"])}', {}),
    "trainFields": ('mutation{trainFields(collectionId:"col_missing"){field}}', {}),
    "queryTemplates": ('{queryTemplates(contextSetId:"cs_missing"){id}}', {}),
    "runQueryTemplate": ('{runQueryTemplate(templateId:"qt_missing"){rowCount}}', {}),
    "createQueryTemplate": (
        'mutation{createQueryTemplate(contextSetId:"cs_missing", input:{name:"t", sql:"SELECT 1"}){id}}',
        {},
    ),
    "updateQueryTemplate": (
        'mutation{updateQueryTemplate(templateId:"qt_missing", input:{name:"t", sql:"SELECT 1"}){id}}',
        {},
    ),
    "approveQueryTemplate": ('mutation{approveQueryTemplate(templateId:"qt_missing"){id}}', {}),
    # context gaps (issue 16)
    "reportContextGap": ('mutation{reportContextGap(input:{task:"table task", missing:"table gap"}){id}}', {}),
    "contextGaps": ("{contextGaps(first:1){totalCount}}", {}),
    "resolveContextGap": (
        'mutation{resolveContextGap(id:"gap_missing", input:{contextSetId:"cs_missing", '
        'definition:{term:"t", definition:"d"}}){status}}',
        {},
    ),
    "dismissContextGap": ('mutation{dismissContextGap(id:"gap_missing", reason:"table"){status}}', {}),
    "checkQueryTemplate": ('{checkQueryTemplate(templateId:"qt_missing"){passed}}', {}),
}
PRINCIPALS = [
    "none",
    "viewer",
    "editor",
    "admin",
    "owner",
    "a:context:read",
    "a:queries:run",
    "a:replay:run",
    "a:gaps:report",
    "a:memory:read",
    "a:memory:write",
    "a:decisions:run",
]
U, F, NA, SM, NF = "UNAUTHENTICATED", "FORBIDDEN", "AGENT_OPERATION_NOT_ALLOWED", "AGENT_SCOPE_MISSING", "NOT_FOUND"
MD = "AGENT_MEMORY_DISABLED"
READ = ["OK", "OK", "OK", "OK"]
AGENT_READ = ["OK", SM, SM, SM, SM, SM, SM]
MEMBER_ONLY = [NA] * 7
EXPECTED = {
    "contextPack": [U, *READ, *AGENT_READ],
    "document": [U, *READ, *AGENT_READ],
    "collections": [U, *READ, *AGENT_READ],
    "replay": [U, NF, NF, NF, NF, SM, SM, NF, SM, SM, SM, SM],
    "timeline": [U, *READ, *AGENT_READ],
    "currentFacts": [U, *READ, *AGENT_READ],
    "viewer": [U] + ["OK"] * 11,
    "operations": [U] + ["OK"] * 11,
    "members": [U, F, F, "OK", "OK", *MEMBER_ONLY],
    "agentCredentials": [U, F, F, "OK", "OK", *MEMBER_ONLY],
    "agentScopes": [U, "OK", "OK", "OK", "OK", *MEMBER_ONLY],
    "createCollection": [U, F, F, "OK", "OK", *MEMBER_ONLY],
    "upsertDocument": [U, F, "OK", "OK", "OK", *MEMBER_ONLY],
    "deleteDocument": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "addMember": [U, F, F, F, "OK", *MEMBER_ONLY],
    "setMemberRole": [U, F, F, F, NF, *MEMBER_ONLY],
    "removeMember": [U, F, F, F, NF, *MEMBER_ONLY],
    "createAgentCredential": [U, F, F, "OK", "OK", *MEMBER_ONLY],
    "revokeAgentCredential": [U, F, F, NF, NF, *MEMBER_ONLY],
    "setAgentProfile": [U, F, F, NF, NF, *MEMBER_ONLY],
    "knowledgeNetworks": [U, *READ, *AGENT_READ],
    "objectTypes": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "objectInstances": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "semanticRecall": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "loadKnowledgeNetwork": [U, F, F, "OK", "OK", *MEMBER_ONLY],
    "startInteraction": [U] + ["OK"] * 11,
    "rememberMemory": [U, F, MD, MD, MD, SM, SM, SM, SM, SM, MD, SM],
    "forgetMemory": [U, NF, NF, NF, NF, SM, SM, SM, SM, SM, MD, SM],
    "recallMemories": [U, MD, MD, MD, MD, SM, SM, SM, SM, MD, SM, SM],
    "listMemories": [U, "OK", "OK", "OK", "OK", SM, SM, SM, SM, MD, SM, SM],
    "memorySettings": [U, F, F, F, "OK", *MEMBER_ONLY],
    "setMemorySettings": [U, F, F, F, "OK", *MEMBER_ONLY],
    "deleteAllMemories": [U, F, F, F, "OK", *MEMBER_ONLY],
    "createDecision": [U, F, NF, NF, NF, SM, SM, SM, SM, SM, SM, NF],
    "decision": [U, F, NF, NF, NF, SM, SM, SM, SM, SM, SM, NF],
    "createSession": [U, F, "OK", "OK", "OK", SM, SM, SM, SM, SM, SM, "OK"],
    "appendSessionMessages": [U, F, NF, NF, NF, SM, SM, SM, SM, SM, SM, NF],
    "archiveSession": [U, F, NF, NF, NF, SM, SM, SM, SM, SM, SM, NF],
    "session": [U, F, NF, NF, NF, SM, SM, SM, SM, SM, SM, NF],
    "sessions": [U, F, "OK", "OK", "OK", SM, SM, SM, SM, SM, SM, "OK"],
    "contextSets": [U, *READ, *AGENT_READ],
    "contextSet": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "lookupDefinitions": [U, *READ, *AGENT_READ],
    "matchVerifiedAnswers": [U, *READ, *AGENT_READ],
    "contextSetVersions": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "createContextSet": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "updateContextSet": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "documents": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "fields": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "queryFields": [U, NF, NF, NF, NF, NF, SM, SM, SM, SM, SM, SM],
    "suggestFields": [U, NF, NF, NF, NF, *MEMBER_ONLY],
    "defineFields": [U, F, F, NF, NF, *MEMBER_ONLY],
    "extractFields": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "labelFieldValue": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "trainFields": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "queryTemplates": [U, F, NF, NF, NF, SM, NF, SM, SM, SM, SM, SM],
    "runQueryTemplate": [U, F, NF, NF, NF, SM, NF, SM, SM, SM, SM, SM],
    "createQueryTemplate": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "checkQueryTemplate": [U, NF, NF, NF, NF, *MEMBER_ONLY],
    "updateQueryTemplate": [U, F, F, NF, NF, *MEMBER_ONLY],
    "approveQueryTemplate": [U, F, F, NF, NF, *MEMBER_ONLY],
    "reportContextGap": [U, *READ, SM, SM, SM, "OK", SM, SM, SM],
    "contextGaps": [U, F, "OK", "OK", "OK", *MEMBER_ONLY],
    "resolveContextGap": [U, F, NF, NF, NF, *MEMBER_ONLY],
    "dismissContextGap": [U, F, NF, NF, NF, *MEMBER_ONLY],
}
CASES = [(op, who, EXPECTED[op][i]) for op in CALLS for i, who in enumerate(PRINCIPALS)]
MCP_TWINS = {
    "mcp.context_pack": "contextPack",
    "mcp.get_passage": "document",
    "mcp.get_section": "document",
    "mcp.get_citation": "document",
    "mcp.list_collections": "collections",
    "mcp.list_knowledge_networks": "knowledgeNetworks",
    "mcp.list_object_types": "objectTypes",
    "mcp.list_query_templates": "queryTemplates",
    "mcp.search_context_sets": "contextSets",
    "mcp.lookup_definitions": "lookupDefinitions",
    "mcp.match_verified_answers": "matchVerifiedAnswers",
    "mcp.run_query_template": "runQueryTemplate",
    "mcp.report_context_gap": "reportContextGap",
    "mcp.timeline": "timeline",
    "mcp.current_facts": "currentFacts",
    "mcp.list_fields": "fields",
    "mcp.query_fields": "queryFields",
    "mcp.remember": "rememberMemory",
    "mcp.recall": "recallMemories",
    "mcp.forget": "forgetMemory",
    "mcp.create_decision": "createDecision",
    "mcp.object_instances": "objectInstances",
    "mcp.semantic_recall": "semanticRecall",
}
"""Each MCP tool → the GraphQL operation of the table it is governed as (same scope and
permissions), so its row of the table is its twin's."""
HTTP_EXPECTED = {
    # files uploaded to a running server (app/http/documents.py): upsertDocument's row
    "POST /v1/documents": [U, F, "OK", "OK", "OK", *MEMBER_ONLY],
}
"""The governed HTTP routes that write (the read routes' cells are in test_governance_channels.py)."""
HTTP_CASES = [(op, who, HTTP_EXPECTED[op][i]) for op in HTTP_EXPECTED for i, who in enumerate(PRINCIPALS)]
REFUSED_BY_AUTHORIZE = {U, F, NA, SM}
"""Codes the authorisation function decides; NOT_FOUND and AGENT_MEMORY_DISABLED come from the
handler, after the call was authorised."""
SCOPES = [who[2:] for who in PRINCIPALS if who.startswith("a:")]


async def _agent(app: InProcess, name: str, scopes: list[str]) -> str:
    r = await app.data(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token credential{id}}}",
        {"i": {"name": name, "scopes": scopes, "expiresInDays": 30}},
        app.tokens["owner"],
    )
    return r["createAgentCredential"]["token"]


@pytest.fixture(scope="module")
async def table(tmp_path_factory) -> InProcess:
    """Workspace A's members (tests/graphql/conftest.py's bootstrap), the two collections, the
    volcano document, the live server's two agents and one agent per scope (``a:<scope>``)."""
    async with in_process_app(tmp_path_factory.mktemp("table"), chunk_max_tokens=40) as app:
        app.tokens, app.ids = await _bootstrap(app.settings.resolved_database_url)
        owner = app.tokens["owner"]
        for name in ("handbook", "finance"):
            r = await app.data("mutation($n:String!){createCollection(name:$n){id}}", {"n": name}, owner)
            app.ids[f"coll:{name}"] = r["createCollection"]["id"]
        r = await app.data(
            "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
            {
                "i": {
                    "collectionId": app.ids["coll:finance"],
                    "externalId": "volcano",
                    "title": "Volcano facts",
                    "text": "Mount Etna is an active stratovolcano on the east coast of Sicily.",
                }
            },
            owner,
        )
        app.ids["doc:volcano"] = r["upsertDocument"]["documentId"]
        # the agents the live server makes (tests/graphql/conftest.py), so the stored profiles match
        await _agent(app, "reader", ["context:read", "queries:run", "replay:run"])
        await _agent(app, "read-only", ["context:read"])
        for scope in SCOPES:
            app.tokens[f"a:{scope}"] = await _agent(app, f"table-{scope}", [scope])
        yield app


def _token(app: InProcess, who: str) -> str | None:
    return None if who == "none" else app.tokens[who]


def _resolve(ids: dict[str, str], value):
    if isinstance(value, str) and value.startswith("@"):
        return ids[value[1:]]
    if isinstance(value, dict):
        return {k: _resolve(ids, v) for k, v in value.items()}
    return value


def assert_outcome(status_code: int, body: dict, expected: str) -> None:
    """The body (and status) of one table cell: data and envelope OK, or the code and envelope."""
    env = body["extensions"]["envelope"]
    assert env["protocol"] == "cairn.envelope.v1" and env["traceId"].startswith("trace_")
    if expected == "OK":
        assert not body.get("errors"), body
        assert env["status"] == "OK" and status_code == 200
    else:
        assert body["errors"][0]["extensions"]["code"] == expected, body["errors"]
        assert env["status"] == ("ERROR" if expected == NF else "REJECTED")


def test_table_covers_every_graphql_operation():
    graphql_ops = {n for n, op in REGISTRY.items() if op.kind in ("query", "mutation")}
    assert set(CALLS) == graphql_ops
    assert all(len(v) == len(PRINCIPALS) for v in EXPECTED.values())
    assert set(MCP_TWINS) == {n for n, op in REGISTRY.items() if op.kind == "mcp"}
    assert set(MCP_TWINS.values()) <= set(CALLS)


async def test_mcp_tools_are_listed_and_refused_as_their_graphql_operation(table: InProcess):
    """Per principal: :func:`authorize` refuses a tool with its twin's code, and the tools it lets
    through are exactly those ``tools/list`` shows (:func:`may_call`, the same rule)."""
    wrong = []
    for i, who in enumerate(PRINCIPALS[1:], start=1):
        ctx = RequestContext(table.services, {"authorization": f"Bearer {_token(table, who)}"})
        principal = await ctx.principal()
        allowed = set()
        for tool, twin in MCP_TWINS.items():
            expected = EXPECTED[twin][i]
            try:
                await authorize(ctx, REGISTRY[tool], {})
                got = "allowed"
                allowed.add(tool)
            except CairnError as exc:
                got = to_response(exc)[1]["code"]
            want = expected if expected in REFUSED_BY_AUTHORIZE else "allowed"
            if got != want or may_call(principal, REGISTRY[tool]) != (got == "allowed"):
                wrong.append((tool, who, want, got))
        if {t.op_name for t in visible_tools(principal)} != allowed:
            wrong.append(("tools/list", who, sorted(allowed), sorted(t.op_name for t in visible_tools(principal))))
    assert wrong == []
    reader = await RequestContext(
        table.services, {"authorization": f"Bearer {table.tokens['a:context:read']}"}
    ).principal()
    listed = {t.name for t in visible_tools(reader)}
    assert "list_collections" in listed and not listed & {"remember", "forget", "create_decision", "report_context_gap"}


async def test_authorize_decides_every_refusal_of_the_table(table: InProcess):
    """Every cell through :func:`authorize` alone (no arguments, no handler): the refused cells
    raise their code with envelope status REJECTED; every other cell is let through."""
    wrong = []
    for op, who, expected in CASES + HTTP_CASES:
        token = _token(table, who)
        ctx = RequestContext(table.services, {"authorization": f"Bearer {token}"} if token else {})
        try:
            principal, _boundary = await authorize(ctx, REGISTRY[op], {})
            got, status = "allowed", None
            assert principal is not None and principal.kind == ("member" if who[:2] != "a:" else "agent")
        except CairnError as exc:
            got, status = to_response(exc)[1]["code"], status_of(exc)
        want = expected if expected in REFUSED_BY_AUTHORIZE else "allowed"
        if got != want or status not in (None, "REJECTED"):
            wrong.append((op, who, want, got, status))
    assert wrong == []


@pytest.mark.parametrize("op,who,expected", CASES, ids=[f"{o}-{w}" for o, w, _ in CASES])
async def test_operation_by_principal(table: InProcess, op, who, expected):
    query, variables = CALLS[op]
    r = await table.gql(query, _resolve(table.ids, variables), _token(table, who))
    assert_outcome(r.status_code, r.json(), expected)


@pytest.mark.parametrize("op,who,expected", HTTP_CASES, ids=[f"{o}-{w}" for o, w, _ in HTTP_CASES])
async def test_upload_route_by_principal(table: InProcess, op, who, expected):
    """``POST /v1/documents`` with one small file into workspace A's handbook: the same
    outcome as ``upsertDocument`` for every principal, refusals in the enveloped error shape."""
    token = _token(table, who)
    r = await table.client.post(
        "/v1/documents",
        params={"collection": table.ids["coll:handbook"]},
        files=[("file", ("table-upload.txt", b"table upload document"))],
        headers={"Authorization": f"Bearer {token}"} if token else {},
    )
    assert r.headers["x-cairn-trace"].startswith("trace_")
    if expected == "OK":
        assert r.status_code == 200, r.text
        assert r.json()["results"][0]["status"] in ("ingested", "unchanged")
    else:
        assert r.status_code == (401 if expected == U else 403)
        assert_outcome(r.status_code, r.json(), expected)


async def test_every_stored_profile_passes_the_contract_check(table: InProcess):
    from sqlalchemy import select

    from cairn.app.core.models import AgentCredential
    from cairn.app.governance.contract import contract_violations
    from cairn.resolvers.schema import schema

    async with table.services.db.session() as s:
        profiles = [c.profile for c in (await s.execute(select(AgentCredential))).scalars()]
    assert len(profiles) >= 10
    assert contract_violations(schema, profiles=profiles) == []
