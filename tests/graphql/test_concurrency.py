"""Check-then-write races, attacked through the live server on SQLite and PostgreSQL.

Each test sends N identical (or conflicting) requests at once — one ``asyncio.gather`` of
``httpx`` posts, one connection each — and asserts what a serial order allows: a one-time
confirmation token executes once, a cap of 50 lets exactly the missing number through, a
version count never passes its limit, an invocation id runs once, get-or-create returns one
row, and a workspace keeps an owner. The numbers before the fix are in each docstring.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import func, insert, select, update

from cairn.app.core.db import Database
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import AgentCredential, AgentMemory, ConfirmationRequest, Member, MemoryWrite, ReplayRecord
from cairn.app.governance.auth import ROLE_PERMISSIONS, Principal
from cairn.app.governance.registry import capabilities_for_scopes
from cairn.app.identity import service as identity
from tests.graphql.conftest import _agent

pytestmark = pytest.mark.both_backends  # check-then-write races: the outcome is the engine's locking

PACK = "query($i:ContextPackInput!){contextPack(input:$i){packId}}"
CREATE_CRED = "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){credential{id}}}"
REMEMBER = "mutation($i:RememberMemoryInput!){rememberMemory(input:$i){memory{id}}}"
LOAD = """mutation($m:String!, $f:[CsvFileInput!]){loadKnowledgeNetwork(mapping:$m, files:$f){knId generation
  receipt{id replayed}}}"""
MEM_SCOPES = ["context:read", "memory:read", "memory:write"]


async def together(
    live, token: str, query: str, variables: list[dict] | dict, n: int | None = None, headers: dict | None = None
) -> list[httpx.Response]:
    """Send the requests at once (one connection each); ``variables`` is one dict for all, or one per request."""
    batch = variables if isinstance(variables, list) else [variables] * (n or 1)
    h = {"Content-Type": "application/json", "Authorization": f"Bearer {token}", **(headers or {})}
    async with httpx.AsyncClient(timeout=180, limits=httpx.Limits(max_connections=len(batch))) as client:
        return list(
            await asyncio.gather(
                *(client.post(f"{live.url}/graphql", json={"query": query, "variables": v}, headers=h) for v in batch)
            )
        )


def outcome(r: httpx.Response) -> str:
    """``OK`` or the first error's code."""
    body = r.json()
    return body["errors"][0]["extensions"]["code"] if body.get("errors") else "OK"


async def scalar(live, stmt):
    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            return (await s.execute(stmt)).scalar_one()
    finally:
        await db.dispose()


async def new_workspace(
    live, *, owners: int = 1, admins: int = 0, credentials: int = 0, memory: bool = False
) -> dict[str, str]:
    """A fresh workspace (its own caps) with member tokens ``owner0…``, ``admin0…`` and
    ``credentials`` live agent credentials made by ``owner0``."""
    db = Database(live.settings.resolved_database_url)
    out: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name=f"race-{secrets.token_hex(4)}")
            ws.memory_enabled = memory
            out["ws"] = ws.id
            for role, count in (("owner", owners), ("admin", admins)):
                for i in range(count):
                    m, t = await identity.create_member(s, workspace_id=ws.id, name=f"{role}{i}", role=role)
                    out[f"{role}{i}"], out[f"id:{role}{i}"] = t.token, m.id
            owner = Principal(
                kind="member",
                id=out["id:owner0"],
                workspace_id=ws.id,
                permissions=ROLE_PERMISSIONS["owner"],
                member_id=out["id:owner0"],
                role="owner",
            )
            for i in range(credentials):
                await identity.create_credential(
                    s,
                    creator=owner,
                    name=f"pre-{i}",
                    scopes=["context:read"],
                    expires_in_days=5,
                    default_capabilities=capabilities_for_scopes({"context:read"}),
                )
    finally:
        await db.dispose()
    return out


async def test_one_confirmation_token_executes_once_under_20_concurrent_reuses(live):
    """Three tokens, each reused by 20 concurrent calls. Before: 9–14 executions per token on
    SQLite, 2–9 on PostgreSQL (the row was read, used_at checked, then set)."""
    name = f"cnf-race-{secrets.token_hex(3)}"
    token = _agent(live, name, ["context:read"], profile={"reconfirmBefore": ["context:pack"]})
    per_round = []
    for task in ("volcano", "billing", "invoices"):
        v = {"i": {"task": task, "retrieval": "LEXICAL"}}
        first = live.gql(PACK, v, token).json()
        cnf = first["errors"][0]["extensions"]["boundary"]["confirmationToken"]
        results = await together(live, token, PACK, v, 20, headers={"X-Cairn-Confirmation": cnf})
        codes = [outcome(r) for r in results]
        per_round.append(codes.count("OK"))
        assert set(codes) <= {"OK", "BOUNDARY_RECONFIRMATION_REQUIRED"}, Counter(codes)
        after = live.gql(PACK, v, token, headers={"X-Cairn-Confirmation": cnf}).json()
        assert after["errors"][0]["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"
    executed = await scalar(
        live,
        select(func.count()).select_from(ReplayRecord).where(ReplayRecord.principal_id == live.ids[f"cred:{name}"]),
    )
    assert (per_round, executed) == ([1, 1, 1], 3), f"executions per token of 20 reuses: {per_round}"


async def test_an_expired_or_foreign_confirmation_token_is_not_consumed(live):
    """The conditional UPDATE's other terms: expiry (compared in SQL on both databases) and
    the credential binding."""
    name = f"cnf-exp-{secrets.token_hex(3)}"
    token = _agent(live, name, ["context:read"], profile={"reconfirmBefore": ["context:pack"]})
    other = _agent(live, f"{name}-b", ["context:read"], profile={"reconfirmBefore": ["context:pack"]})
    v = {"i": {"task": "volcano", "retrieval": "LEXICAL"}}
    cnf = live.gql(PACK, v, token).json()["errors"][0]["extensions"]["boundary"]["confirmationToken"]
    foreign = live.gql(PACK, v, other, headers={"X-Cairn-Confirmation": cnf}).json()
    assert foreign["errors"][0]["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"
    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            await s.execute(
                update(ConfirmationRequest)
                .where(ConfirmationRequest.token == cnf)
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
    finally:
        await db.dispose()
    expired = live.gql(PACK, v, token, headers={"X-Cairn-Confirmation": cnf}).json()
    assert expired["errors"][0]["extensions"]["code"] == "BOUNDARY_RECONFIRMATION_REQUIRED"


async def test_credential_cap_lets_exactly_the_missing_five_through(live):
    """10 concurrent creates at 45 active. Before: 10 succeeded on SQLite, 9 on PostgreSQL."""
    w = await new_workspace(live, credentials=45)
    results = await together(
        live, w["owner0"], CREATE_CRED, [{"i": {"name": f"burst-{i}", "expiresInDays": 3}} for i in range(10)]
    )
    codes = [outcome(r) for r in results]
    assert (codes.count("OK"), codes.count("AGENT_CREDENTIAL_LIMIT")) == (5, 5), Counter(codes)
    active = await scalar(
        live,
        select(func.count())
        .select_from(AgentCredential)
        .where(AgentCredential.workspace_id == w["ws"], AgentCredential.revoked_at.is_(None)),
    )
    assert active == 50


async def _memory_workspace(live) -> tuple[dict[str, str], str, str]:
    w = await new_workspace(live, owners=1, admins=2, memory=True)
    a = _agent(live, f"mem-a-{secrets.token_hex(3)}", MEM_SCOPES, token=w["admin0"])
    b = _agent(live, f"mem-b-{secrets.token_hex(3)}", MEM_SCOPES, token=w["admin1"])
    return w, a, b


async def test_memory_version_cap_holds_under_concurrent_remembers(live):
    """10 concurrent remembers at 4,995 stored versions. Before: PostgreSQL stored all 10 (5,005);
    SQLite held (its retention purge happened to take the write lock before the count)."""
    w, agent, _ = await _memory_workspace(live)
    now = utcnow()
    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            await s.execute(
                insert(AgentMemory),
                [
                    {
                        "id": new_id("mem"),
                        "workspace_id": w["ws"],
                        "owner_member_id": w["id:admin0"],
                        "writer_id": "seed",
                        "namespace": "seed",
                        "text": f"seed note {i}",
                        "entities": [],
                        "recorded_at": now,
                    }
                    for i in range(4995)
                ],
            )
    finally:
        await db.dispose()
    results = await together(
        live, agent, REMEMBER, [{"i": {"namespace": "burst", "text": f"burst note {i}"}} for i in range(10)]
    )
    codes = [outcome(r) for r in results]
    assert (codes.count("OK"), codes.count("AGENT_MEMORY_FULL")) == (5, 5), Counter(codes)
    stored = await scalar(
        live,
        select(func.count())
        .select_from(AgentMemory)
        .where(AgentMemory.workspace_id == w["ws"], AgentMemory.owner_member_id == w["id:admin0"]),
    )
    assert stored == 5000


async def test_memory_rate_limit_holds_under_concurrent_remembers(live):
    """10 concurrent remembers with 115 of 120 used this hour. Before: PostgreSQL accepted all 10."""
    w, _, agent = await _memory_workspace(live)
    cred_id = agent.split("_")[1]
    now = utcnow()
    db = Database(live.settings.resolved_database_url)
    try:
        async with db.session() as s:
            await s.execute(
                insert(MemoryWrite),
                [
                    {"credential_id": cred_id, "workspace_id": w["ws"], "at": now - timedelta(minutes=30)}
                    for _ in range(115)
                ],
            )
    finally:
        await db.dispose()
    results = await together(
        live, agent, REMEMBER, [{"i": {"namespace": "rate", "text": f"rate note {i}"}} for i in range(10)]
    )
    codes = [outcome(r) for r in results]
    assert (codes.count("OK"), codes.count("AGENT_MEMORY_RATE_LIMITED")) == (5, 5), Counter(codes)


def _mapping(kn: str) -> str:
    return (
        f"{{id: {kn}, name: Race, object_types: [{{id: a, name: A, table: a, primary_key: [x], "
        "properties: [{name: x, type: integer}]}]}"
    )


async def test_one_invocation_id_runs_one_load(live):
    """10 concurrent loads with one X-Client-Invocation-Id. Before: every call ran the load;
    4 (SQLite) and 8 (PostgreSQL) of them ended in INTERNAL_SERVER_ERROR."""
    kn = f"inv{secrets.token_hex(3)}"
    v = {"m": _mapping(kn), "f": [{"name": "a.csv", "content": "x\n1\n2\n"}]}
    h = {"X-Client-Invocation-Id": f"load-{kn}"}
    results = await together(live, live.tokens["owner"], LOAD, v, 10, headers=h)
    codes = [outcome(r) for r in results]
    done = [r.json()["data"]["loadKnowledgeNetwork"] for r in results if outcome(r) == "OK"]
    runs = sorted({d["generation"] for d in done})
    assert set(codes) <= {"OK", "INVOCATION_IN_PROGRESS"} and "OK" in codes, (Counter(codes), runs)
    assert {d["generation"] for d in done} == {1} and len({d["receipt"]["id"] for d in done}) == 1
    assert sum(not d["receipt"]["replayed"] for d in done) == 1
    again = live.gql(LOAD, v, live.tokens["owner"], headers=h)
    replay = again.json()["data"]["loadKnowledgeNetwork"]
    assert replay["receipt"]["replayed"] is True and replay["generation"] == 1
    nets = live.data("{knowledgeNetworks{id generation}}", token=live.tokens["owner"])["knowledgeNetworks"]
    assert {n["id"]: n["generation"] for n in nets}[kn] == 1  # the load ran once
    # a failed run releases its claim: the retry runs (and fails) again instead of waiting forever
    bad = {"m": _mapping(kn), "f": [{"name": "a.csv", "content": "x\n1\n1\n"}]}  # duplicate key
    h2 = {"X-Client-Invocation-Id": f"bad-{kn}"}
    for _ in range(2):
        assert outcome(live.gql(LOAD, bad, live.tokens["owner"], headers=h2)) == "BAD_USER_INPUT"


async def test_concurrent_loads_of_one_network_all_apply(live):
    """6 concurrent loads of a new network. Before: 4–5 failed with INTERNAL_SERVER_ERROR
    (two inserts of the same network row)."""
    kn = f"par{secrets.token_hex(3)}"
    v = {"m": _mapping(kn), "f": [{"name": "a.csv", "content": "x\n1\n2\n3\n"}]}
    results = await together(live, live.tokens["owner"], LOAD, v, 6)
    codes = [outcome(r) for r in results]
    assert codes == ["OK"] * 6, Counter(codes)
    gens = sorted(r.json()["data"]["loadKnowledgeNetwork"]["generation"] for r in results)
    assert gens == [1, 2, 3, 4, 5, 6]


async def test_get_or_create_collection_returns_one_collection(live):
    """10 concurrent createCollection of one new name. Before: 4 (SQLite) and 9 (PostgreSQL)
    INTERNAL_SERVER_ERROR."""
    name = f"race-{secrets.token_hex(3)}"
    results = await together(
        live, live.tokens["owner"], "mutation($n:String!){createCollection(name:$n){id}}", {"n": name}, 10
    )
    codes = [outcome(r) for r in results]
    assert codes == ["OK"] * 10, Counter(codes)
    assert len({r.json()["data"]["createCollection"]["id"] for r in results}) == 1


async def test_concurrent_versions_of_one_document_all_recorded(live):
    """8 concurrent upserts of one new externalId with different texts. Before: 7 of 8
    INTERNAL_SERVER_ERROR (same document or version number inserted twice)."""
    ext = f"race-{secrets.token_hex(3)}"
    m = "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId versionId status}}"
    results = await together(
        live,
        live.tokens["owner"],
        m,
        [
            {
                "i": {
                    "collectionId": live.ids["coll:handbook"],
                    "externalId": ext,
                    "text": f"Race version {i} of the note.",
                }
            }
            for i in range(8)
        ],
    )
    codes = [outcome(r) for r in results]
    assert codes == ["OK"] * 8, Counter(codes)
    done = [r.json()["data"]["upsertDocument"] for r in results]
    assert len({d["documentId"] for d in done}) == 1 and len({d["versionId"] for d in done}) == 8
    assert sorted(d["status"] for d in done) == ["created"] + ["updated"] * 7


@pytest.mark.parametrize("how", ["demote", "remove"])
async def test_a_workspace_keeps_an_owner_when_owners_demote_each_other(live, how):
    """6 owners each demote (or remove) the next, all at once. Before: every call passed the
    last-owner check (each saw 5 other owners) and the workspace was left without one."""
    w = await new_workspace(live, owners=6)
    if how == "demote":
        m = 'mutation($m:ID!){setMemberRole(memberId:$m, role:"admin"){id}}'
    else:
        m = "mutation($m:ID!){removeMember(memberId:$m){id}}"

    async def one(i: int):
        return (await together(live, w[f"owner{i}"], m, [{"m": w[f"id:owner{(i + 1) % 6}"]}]))[0]

    codes = [outcome(r) for r in await asyncio.gather(*(one(i) for i in range(6)))]
    owners = await scalar(
        live,
        select(func.count())
        .select_from(Member)
        .where(Member.workspace_id == w["ws"], Member.role == "owner", Member.removed_at.is_(None)),
    )
    assert owners == 6 - codes.count("OK") and owners >= 1, (owners, Counter(codes))


async def test_concurrent_profile_edits_all_land(live):
    """5 concurrent setAgentProfile calls, each replacing a different list. Before: each read
    the stored profile, merged its list and wrote the whole profile back, so lists were lost
    (a hard boundary among them)."""
    name = f"prof-race-{secrets.token_hex(3)}"
    _agent(live, name, ["context:read"])
    cid = live.ids[f"cred:{name}"]
    lists = {
        "grantedCapabilities": ["context:pack"],
        "naturalAvoidances": ["document:read"],
        "suggestOnly": ["ontology:read"],
        "reconfirmBefore": ["ontology:query"],
        "hardBoundaries": ["memory:write"],
    }
    m = "mutation($id:ID!, $p:ResponsibilityProfileInput!){setAgentProfile(id:$id, profile:$p){id}}"
    results = await together(live, live.tokens["owner"], m, [{"id": cid, "p": {k: v}} for k, v in lists.items()])
    assert [outcome(r) for r in results] == ["OK"] * 5
    creds = live.data(
        "{agentCredentials{id profile{grantedCapabilities naturalAvoidances suggestOnly "
        "reconfirmBefore hardBoundaries}}}",
        token=live.tokens["owner"],
    )["agentCredentials"]
    assert next(c["profile"] for c in creds if c["id"] == cid) == lists


async def test_concurrent_revokes_keep_the_first_time(live):
    """10 concurrent revokes of one credential. Before: each call set its own time, so the
    answers (and the stored time) disagreed (4–5 distinct times)."""
    name = f"rev-race-{secrets.token_hex(3)}"
    _agent(live, name, ["decisions:run"])
    revoked = await together(
        live,
        live.tokens["owner"],
        "mutation($id:ID!){revokeAgentCredential(id:$id){revokedAt}}",
        {"id": live.ids[f"cred:{name}"]},
        10,
    )
    assert len({r.json()["data"]["revokeAgentCredential"]["revokedAt"] for r in revoked}) == 1


async def test_concurrent_archives_keep_the_first_time(live):
    """Three sessions, each archived by 20 concurrent calls. Before: each call that read the
    session unarchived set its own time, so the answers (and the stored time) disagreed."""
    member = live.tokens["editor"]
    distinct = []
    for i in range(3):
        sid = live.data("mutation($t:String){createSession(title:$t){id}}", {"t": f"race {i}"}, token=member)[
            "createSession"
        ]["id"]
        archived = await together(
            live, member, "mutation($id:ID!){archiveSession(id:$id){archivedAt}}", {"id": sid}, 20
        )
        distinct.append(len({r.json()["data"]["archiveSession"]["archivedAt"] for r in archived}))
    assert distinct == [1, 1, 1], f"distinct archive times per session: {distinct}"
