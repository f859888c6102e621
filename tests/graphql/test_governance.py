"""Identity, scopes, envelope and boundaries on every operation and channel (SPEC §1, §9)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import httpx
import pytest
import websockets
from sqlalchemy import update

from cairn.app.core.db import Database
from cairn.app.core.ids import utcnow
from cairn.app.core.models import AgentCredential
from tests import local_http
from tests.graphql.conftest import _agent
from tests.graphql.pack_calls import PACK_QUERY, STREAM_QUERY, _stream, error_of

# ---------------------------------------------------------------------------------------------
# The operation × principal table. Each row: a minimal call, then the expected outcome per
# principal: "OK", or the error code. Allowed calls on ids that do not exist answer NOT_FOUND
# (they passed every governance check). Written out by hand, not derived from the registry.
# ---------------------------------------------------------------------------------------------

PACK = (
    "query($i:ContextPackInput!){contextPack(input:$i){packId}}",
    {"i": {"task": "volcano", "retrieval": "LEXICAL"}},
)
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
    "createQueryTemplate": [U, F, F, NF, NF, *MEMBER_ONLY],
    "updateQueryTemplate": [U, F, F, NF, NF, *MEMBER_ONLY],
    "approveQueryTemplate": [U, F, F, NF, NF, *MEMBER_ONLY],
    "reportContextGap": [U, *READ, SM, SM, SM, "OK", SM, SM, SM],
    "contextGaps": [U, F, "OK", "OK", "OK", *MEMBER_ONLY],
}
CASES = [(op, who, EXPECTED[op][i]) for op in CALLS for i, who in enumerate(PRINCIPALS)]


@pytest.fixture(scope="module")
def tokens(live):
    out = {"none": None}
    for role in ("viewer", "editor", "admin", "owner"):
        out[role] = live.tokens[role]
    for scope in (
        "context:read",
        "queries:run",
        "replay:run",
        "gaps:report",
        "memory:read",
        "memory:write",
        "decisions:run",
    ):
        out[f"a:{scope}"] = _agent(live, f"table-{scope}", [scope])
    return out


def _resolve(live, value):
    if isinstance(value, str) and value.startswith("@"):
        return live.ids[value[1:]]
    if isinstance(value, dict):
        return {k: _resolve(live, v) for k, v in value.items()}
    return value


def test_table_covers_every_graphql_operation():
    from cairn.app.governance.registry import REGISTRY

    graphql_ops = {n for n, op in REGISTRY.items() if op.kind in ("query", "mutation")}
    assert set(CALLS) == graphql_ops
    assert all(len(v) == len(PRINCIPALS) for v in EXPECTED.values())


@pytest.mark.parametrize("op,who,expected", CASES, ids=[f"{o}-{w}" for o, w, _ in CASES])
def test_operation_by_principal(live, tokens, op, who, expected):
    query, variables = CALLS[op]
    r = live.gql(query, _resolve(live, variables), tokens[who])
    body = r.json()
    env = body["extensions"]["envelope"]
    assert env["protocol"] == "cairn.envelope.v1" and env["traceId"].startswith("trace_")
    if expected == "OK":
        assert not body.get("errors"), body
        assert env["status"] == "OK" and r.status_code == 200
    else:
        assert body["errors"][0]["extensions"]["code"] == expected, body["errors"]
        assert env["status"] == ("ERROR" if expected == NF else "REJECTED")


async def test_subscription_by_principal(live, tokens):
    variables = {"i": {"task": "volcano", "retrieval": "LEXICAL"}}
    expected = {"viewer": "OK", "owner": "OK", "a:context:read": "OK", "a:queries:run": SM, "a:memory:read": SM}
    for who, want in expected.items():
        events = await _stream(live, variables, tokens[who])
        if want == "OK":
            assert events[0]["__typename"] == "PackHeader", (who, events)
        else:
            assert events[0]["__error__"][0]["extensions"]["code"] == want, who


def test_ndjson_route_by_principal(live, tokens):
    for who, status in {"viewer": 200, "a:context:read": 200, "a:queries:run": 403, "none": 401}.items():
        headers = {"Authorization": f"Bearer {tokens[who]}"} if tokens[who] else {}
        r = local_http.post(
            f"{live.url}/v1/context-packs/stream",
            json={"task": "volcano", "retrieval": "LEXICAL"},
            headers=headers,
            timeout=30,
        )
        assert r.status_code == status, (who, r.text)


# --------------------------------------------------------------------------- browser refusal


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


# ------------------------------------------------------------- credential lifecycle and limits


def test_revocation_is_immediate(live):
    token = _agent(live, "to-revoke", ["context:read"])
    q, v = PACK
    assert not live.gql(q, v, token).json().get("errors")
    live.data(
        "mutation($id:ID!){revokeAgentCredential(id:$id){active revokedAt}}",
        {"id": live.ids["cred:to-revoke"]},
        live.tokens["owner"],
    )
    r = live.gql(q, v, token)
    assert r.status_code == 401 and error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_REVOKED"


async def test_expired_credentials_are_refused(live):
    token = _agent(live, "to-expire", ["context:read"])
    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            await s.execute(
                update(AgentCredential)
                .where(AgentCredential.id == live.ids["cred:to-expire"])
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
    finally:
        await db.dispose()
    q, v = PACK
    r = await asyncio.to_thread(live.gql, q, v, token)
    assert r.status_code == 401 and error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_EXPIRED"


def test_authority_lost_when_the_creator_is_demoted_or_removed(live):
    admin_token = live.data(
        'mutation{addMember(name:"temp-admin", role:"admin"){token member{id}}}', None, live.tokens["owner"]
    )["addMember"]
    member_id = admin_token["member"]["id"]
    agent = _agent(live, "from-temp-admin", ["context:read", "queries:run"], token=admin_token["token"])
    docs_pack = {"i": {"task": "volcano", "filters": {"sources": ["DOCUMENTS"]}}}
    assert not live.gql(PACK_QUERY, docs_pack, agent).json().get("errors")
    live.data(
        'mutation($m:ID!){setMemberRole(memberId:$m, role:"viewer"){role}}', {"m": member_id}, live.tokens["owner"]
    )
    r = live.gql(PACK_QUERY, docs_pack, agent)
    assert error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_AUTHORITY_LOST"
    q, v = PACK
    assert not live.gql(q, v, agent).json().get("errors")  # context:read still within a viewer's rights
    live.data("mutation($m:ID!){removeMember(memberId:$m){id}}", {"m": member_id}, live.tokens["owner"])
    r = live.gql(q, v, agent)
    assert r.status_code == 403 and error_of(r)["extensions"]["code"] == "AGENT_CREDENTIAL_AUTHORITY_LOST"


def test_creation_rules(live):
    m = "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}"
    for days in (0, 366):
        r = live.gql(m, {"i": {"name": "x", "expiresInDays": days}}, live.tokens["owner"])
        assert error_of(r)["extensions"]["code"] == "BAD_USER_INPUT"
        assert error_of(r)["extensions"]["field"] == "input.expiresInDays"
    r = live.gql(m, {"i": {"name": "x", "expiresInDays": 5, "scopes": ["context:write"]}}, live.tokens["owner"])
    assert error_of(r)["extensions"]["code"] == "BAD_USER_INPUT"
    r = live.gql(m, {"i": {"name": "x", "expiresInDays": 5, "contextSetId": "cs_nope"}}, live.tokens["owner"])
    assert (
        error_of(r)["extensions"]["code"] == "NOT_FOUND" and error_of(r)["extensions"]["field"] == "input.contextSetId"
    )
    # an admin cannot mint what it could not do itself? admins hold every scope's permissions;
    # defaults: context:read queries:run replay:run; memory and decisions off
    r = live.data(
        m.replace("{token}", "{token credential{scopes profile{grantedCapabilities hardBoundaries}}}"),
        {"i": {"name": "defaults", "expiresInDays": 5}},
        live.tokens["admin"],
    )
    cred = r["createAgentCredential"]
    assert cred["credential"]["scopes"] == ["context:read", "queries:run", "replay:run"]
    assert "context:pack" in cred["credential"]["profile"]["grantedCapabilities"]
    assert cred["credential"]["profile"]["hardBoundaries"] == []
    assert cred["token"].startswith("ck_") and len(cred["token"]) == 3 + 16 + 1 + 43
    listed = live.data("{agentCredentials{id name}}", None, live.tokens["admin"])["agentCredentials"]
    assert all("token" not in c for c in listed)


def test_fifty_active_credentials_per_retaining_workspace(live):
    m = "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){credential{id}}}"
    ids = [
        live.data(m, {"i": {"name": f"cap-{i}", "expiresInDays": 1}}, live.tokens["ownerCap"])["createAgentCredential"][
            "credential"
        ]["id"]
        for i in range(50)
    ]
    r = live.gql(m, {"i": {"name": "cap-51", "expiresInDays": 1}}, live.tokens["ownerCap"])
    err = error_of(r)
    assert err["extensions"]["code"] == "AGENT_CREDENTIAL_LIMIT" and err["extensions"]["limit"] == 50
    live.data("mutation($id:ID!){revokeAgentCredential(id:$id){id}}", {"id": ids[0]}, live.tokens["ownerCap"])
    assert live.data(m, {"i": {"name": "cap-51", "expiresInDays": 1}}, live.tokens["ownerCap"])


# ---------------------------------------------------------------------------------- boundaries


def _profiled(live, name: str, profile: dict) -> str:
    return _agent(live, name, ["context:read"], profile=profile)


def test_boundary_blocked_by_hard_boundary_and_by_not_granted(live):
    q, v = PACK
    for name, profile in (
        ("hard", {"hardBoundaries": ["context:pack"]}),
        ("ungranted", {"grantedCapabilities": ["document:read"]}),
    ):
        r = live.gql(q, v, _profiled(live, name, profile))
        err = error_of(r)
        assert err["extensions"]["code"] == "BOUNDARY_BLOCKED"
        assert err["extensions"]["boundary"]["decision"] == "BLOCKED"
        env = r.json()["extensions"]["envelope"]
        assert env["status"] == "REJECTED" and env["boundary"]["decision"] == "BLOCKED"
        assert r.json()["data"] is None


@pytest.mark.parametrize("listname,decision", [("naturalAvoidances", "AVOID"), ("reconfirmBefore", "RECONFIRM")])
def test_boundary_reconfirmation_executes_only_with_its_token(live, listname, decision):
    token = _profiled(live, f"re-{decision}", {listname: ["context:pack"]})
    q, v = PACK
    r = live.gql(q, v, token)
    err = error_of(r)
    assert err["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"
    b = err["extensions"]["boundary"]
    assert b["decision"] == decision and b["confirmationToken"].startswith("cnf_")
    assert r.json()["extensions"]["envelope"]["status"] == "REJECTED"
    # a different input does not accept the token
    other = {"i": {"task": "billing", "retrieval": "LEXICAL"}}
    r2 = live.gql(q, other, token, headers={"X-Cairn-Confirmation": b["confirmationToken"]})
    assert error_of(r2)["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"
    ok = live.gql(q, v, token, headers={"X-Cairn-Confirmation": b["confirmationToken"]}).json()
    assert not ok.get("errors") and ok["data"]["contextPack"]["packId"]
    assert ok["extensions"]["envelope"]["boundary"]["confirmed"] is True
    again = live.gql(q, v, token, headers={"X-Cairn-Confirmation": b["confirmationToken"]})
    assert error_of(again)["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"  # single use


def test_boundary_suggest_only_returns_a_proposal(live):
    token = _profiled(live, "suggester", {"suggestOnly": ["context:pack"]})
    q, v = PACK
    r = live.gql(q, v, token)
    err = error_of(r)
    assert err["extensions"]["code"] == "BOUNDARY_SUGGEST_ONLY"
    assert err["extensions"]["proposal"] == {
        "operation": "contextPack",
        "capability": "context:pack",
        "arguments": {"input": {**v["i"], "budget": None, "asOf": None, "filters": None, "contextSetId": None}},
    }


def test_boundary_allowed_is_recorded_in_the_envelope(live):
    q, v = PACK
    env = live.gql(q, v, live.tokens["agent"]).json()["extensions"]["envelope"]
    assert env["boundary"] == {"decision": "ALLOWED", "capability": "context:pack", "reason": "granted"}
    assert env["coordinate"] == "G1.U1.P1.Z1.A1" and env["capability"] == "context:pack"


# ------------------------------------------------------------------------------------ envelope


def test_trace_ids_are_carried_through(live):
    q, v = PACK
    r = live.gql(q, v, live.tokens["agent"], headers={"x-cairn-trace": "trace_agent-hop-1"})
    assert r.json()["extensions"]["envelope"]["traceId"] == "trace_agent-hop-1"
    assert r.headers["x-cairn-trace"] == "trace_agent-hop-1"
    r = live.gql(
        q, v, live.tokens["agent"], headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    )
    assert r.json()["extensions"]["envelope"]["traceId"] == "trace_0af7651916cd43dd8448eb211c80319c"


def test_envelope_on_parse_and_validation_errors(live):
    r = live.gql("{ contextPack(", None, live.tokens["agent"])
    body = r.json()
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    assert body["extensions"]["envelope"]["status"] == "ERROR" and r.status_code == 400
    r = live.gql("{ nope }", None, live.tokens["agent"])
    assert r.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    deep = "{ viewer { " + "kind " + "}" + " }"
    assert not live.gql(deep, None, live.tokens["agent"]).json().get("errors")
    aliases = "{ " + " ".join(f"a{i}: viewer {{ kind }}" for i in range(31)) + " }"
    r = live.gql(aliases, None, live.tokens["agent"])
    assert r.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


# ----------------------------------------------------------------------------- cross-workspace


async def test_nothing_of_workspace_a_is_reachable_from_b(live):
    b_agent, b_owner = live.tokens["agentB"], live.tokens["ownerB"]
    q = "query($id:ID!){document(id:$id){id}}"
    for token in (b_agent, b_owner):
        assert error_of(live.gql(q, {"id": live.ids["doc:volcano"]}, token))["extensions"]["code"] == "NOT_FOUND"
        p = live.data(PACK_QUERY, {"i": {"task": "Mount Etna volcano Sicily"}}, token)["contextPack"]
        assert p["items"] == []
        r = live.gql(PACK_QUERY, {"i": {"task": "x", "filters": {"collectionIds": [live.ids["coll:finance"]]}}}, token)
        assert error_of(r)["extensions"]["code"] == "NOT_FOUND"
        assert live.data("{collections{id}}", None, token)["collections"] == []
    r = live.gql(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
        {"i": {"collectionId": live.ids["coll:finance"], "externalId": "x", "text": "intrusion"}},
        b_owner,
    )
    assert error_of(r)["extensions"]["code"] == "NOT_FOUND"
    r = live.gql("mutation($id:ID!){deleteDocument(id:$id){deletedAt}}", {"id": live.ids["doc:volcano"]}, b_owner)
    assert error_of(r)["extensions"]["code"] == "NOT_FOUND"
    r = live.gql("mutation($id:ID!){revokeAgentCredential(id:$id){id}}", {"id": live.ids["cred:reader"]}, b_owner)
    assert error_of(r)["extensions"]["code"] == "NOT_FOUND"
    events = await _stream(live, {"i": {"task": "Mount Etna volcano Sicily"}}, b_agent)
    assert [e["__typename"] for e in events] == ["PackHeader", "PackFooter"]
    r = await asyncio.to_thread(
        httpx.post,
        f"{live.url}/v1/context-packs/stream",
        json={"task": "Mount Etna volcano Sicily"},
        headers={"Authorization": f"Bearer {b_agent}"},
        timeout=30,
    )
    assert [json.loads(line)["type"] for line in r.text.splitlines()] == ["header", "footer"]


def test_document_token_limit(live):
    huge = "{ " + " ".join(f"a{i}: viewer {{ kind id role }}" for i in range(25)) + " " + "viewer { kind } " * 500 + "}"
    r = live.gql(huge, None, live.tokens["agent"])
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_PARSE_FAILED" and "token" in err["message"].lower()


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


async def test_every_stored_profile_passes_the_contract_check(live, tokens):
    from sqlalchemy import select

    from cairn.app.governance.contract import contract_violations
    from cairn.resolvers.schema import schema

    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            profiles = [c.profile for c in (await s.execute(select(AgentCredential))).scalars()]
    finally:
        await db.dispose()
    assert len(profiles) >= 10
    assert contract_violations(schema, profiles=profiles) == []
