"""The operation × principal table (SPEC §1, §9): every GraphQL operation called by no one, each
member role and each agent scope, with the expected outcome and envelope; the subscription
and the NDJSON route by principal; every stored profile passes the contract check."""

from __future__ import annotations

import pytest

from cairn.app.core.db import Database
from cairn.app.core.models import AgentCredential
from tests import local_http
from tests.graphql.conftest import _agent
from tests.graphql.pack_calls import PACK, _stream

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
