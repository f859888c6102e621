"""Governed agent memory through the live server (SQLite and PostgreSQL).

Own workspaces (created here, so the shared workspace A keeps memory off for the governance
table): ``memco`` (memory on) with an owner and two admins, Alice and Bob, each with an
agent; ``memoff`` (memory off) and ``memnr`` (non-retaining).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from cairn.app.core.db import Database
from cairn.app.core.models import AgentMemory, MemoryCitation
from cairn.app.identity import service as identity
from tests import factories
from tests.graphql.conftest import _agent

pytestmark = pytest.mark.both_backends  # memory versions, as-of, forgetting, purges and rate-limit counters

REMEMBER = (
    "mutation($i:RememberMemoryInput!){rememberMemory(input:$i){superseded masked{kind count} "
    "memory{id namespace key text version type evidence trust sourceState recordedAt "
    "citations{passageId passageSha256 sourceState}}}}"
)
RECALL = (
    "query($i:RecallMemoriesInput!){recallMemories(input:$i){hidden candidates "
    "legs{name status detail} memories{score ranks{bm25 vector entity} memory{id text key version}}}}"
)
LIST = (
    "query($i:ListMemoriesInput){listMemories(input:$i){hidden nextCursor memories{id text key version sourceState}}}"
)
FORGET = "mutation($i:ForgetMemoryInput!){forgetMemory(input:$i){deleted}}"
MEM_SCOPES = ["context:read", "memory:read", "memory:write"]


async def _workspace(url: str, name: str, *, retaining: bool = True) -> dict[str, str]:
    db = Database(url)
    out: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name=name, retaining=retaining)
            out["ws"] = ws.id
            for who, role in (("owner", "owner"), ("alice", "admin"), ("bob", "admin")):
                m, t = await identity.create_member(s, workspace_id=ws.id, name=who, role=role)
                out[who], out[f"id:{who}"] = t.token, m.id
                _c, out[f"{who}Agent"] = await factories.credential(
                    s, creator=factories.member_principal(m), name=f"{who}-agent", scopes=MEM_SCOPES
                )
    finally:
        await db.dispose()
    return out


@pytest.fixture(scope="module")
def mw(live):
    """Tokens of the memory workspaces; memco has memory switched on by its owner."""
    url = live.settings.resolved_database_url
    t = asyncio.run(_workspace(url, "memco"))
    t["off"] = asyncio.run(_workspace(url, "memoff"))
    t["nr"] = asyncio.run(_workspace(url, "memnr", retaining=False))
    data = live.data(
        "mutation{setMemorySettings(enabled:true, retentionDays:30){enabled retentionDays retaining}}", token=t["owner"]
    )
    assert data["setMemorySettings"] == {"enabled": True, "retentionDays": 30, "retaining": True}
    return t


def _code(r) -> str:
    return r.json()["errors"][0]["extensions"]["code"]


def _remember(live, token, **i):
    return live.data(REMEMBER, {"i": i}, token)["rememberMemory"]


def test_switch_off_by_default_and_non_retaining(live, mw):
    off, nr = mw["off"], mw["nr"]
    r = live.gql(REMEMBER, {"i": {"namespace": "n", "text": "hello"}}, off["aliceAgent"])
    assert r.status_code == 403 and _code(r) == "AGENT_MEMORY_DISABLED"
    assert live.data("{memorySettings{enabled retentionDays}}", token=off["owner"])["memorySettings"] == {
        "enabled": False,
        "retentionDays": 90,
    }
    # a member can always list their own (nothing), an agent cannot while the switch is off
    assert live.data(LIST, {}, off["alice"])["listMemories"]["memories"] == []
    assert _code(live.gql(LIST, {}, off["aliceAgent"])) == "AGENT_MEMORY_DISABLED"
    r = live.gql(RECALL, {"i": {"query": "x"}}, nr["aliceAgent"])
    assert r.status_code == 403 and _code(r) == "NON_RETAINING_WORKSPACE"
    assert (
        _code(live.gql("mutation{setMemorySettings(enabled:true){enabled}}", token=nr["owner"]))
        == "NON_RETAINING_WORKSPACE"
    )
    r = live.gql("mutation{setMemorySettings(retentionDays:366){enabled}}", token=off["owner"])
    assert _code(r) == "BAD_USER_INPUT" and r.json()["errors"][0]["extensions"]["limit"] == "1-365"
    assert _code(live.gql("mutation{setMemorySettings(enabled:true){enabled}}", token=off["alice"])) == "FORBIDDEN"


def test_remember_masks_and_supersedes(live, mw):
    one = _remember(
        live,
        mw["aliceAgent"],
        namespace="contacts",
        key="dana",
        text="Dana from Globex: dana@globex.example, +972-52-123-4567, card 4111 1111 1111 1111",
    )
    m = one["memory"]
    assert m["text"] == "Dana from Globex: [EMAIL_1], [PHONE_1], card [CARD_1]"
    assert {x["kind"]: x["count"] for x in one["masked"]} == {"CARD": 1, "EMAIL": 1, "PHONE": 1}
    assert (m["type"], m["evidence"], m["trust"], m["version"], one["superseded"]) == (
        "memory",
        False,
        "UNTRUSTED",
        1,
        0,
    )
    two = _remember(live, mw["aliceAgent"], namespace="contacts", key="dana", text="Dana moved to Initech")
    assert (two["superseded"], two["memory"]["version"]) == (1, 2)
    page = live.data(LIST, {"i": {"namespace": "contacts", "key": "dana"}}, mw["aliceAgent"])["listMemories"]
    assert [x["text"] for x in page["memories"]] == ["Dana moved to Initech"]


@pytest.mark.parametrize(
    "inp,code,field",
    [
        ({"namespace": "n", "text": "dana@globex.example +44 20 7946 0958"}, "AGENT_MEMORY_EMPTY", "text"),
        ({"namespace": "dana@globex.example", "text": "x"}, "AGENT_MEMORY_PERSONAL_DATA", "input.namespace"),
        ({"namespace": "n", "key": "call 052-123-4567", "text": "x"}, "AGENT_MEMORY_PERSONAL_DATA", "input.key"),
        # issue 32 item 6: the same detector as the text, spaced separators included
        ({"namespace": "n", "key": "ssn 536 - 22 - 1234", "text": "x"}, "AGENT_MEMORY_PERSONAL_DATA", "input.key"),
        ({"namespace": "n", "text": "x" * 1001}, "BAD_USER_INPUT", "input.text"),
        ({"namespace": "n" * 65, "text": "x"}, "BAD_USER_INPUT", "input.namespace"),
        ({"namespace": "n", "key": "k" * 121, "text": "x"}, "BAD_USER_INPUT", "input.key"),
        (
            {"namespace": "n", "text": "x", "citations": [f"psg_{i}" for i in range(21)]},
            "BAD_USER_INPUT",
            "input.citations",
        ),
        ({"namespace": "n", "text": "x", "citations": ["psg_missing"]}, "BAD_USER_INPUT", "citations[0]"),
    ],
)
def test_remember_refusals(live, mw, inp, code, field):
    r = live.gql(REMEMBER, {"i": inp}, mw["aliceAgent"])
    err = r.json()["errors"][0]
    assert err["extensions"]["code"] == code and err["extensions"]["field"] == field
    assert r.status_code == 400


def test_privacy_on_every_operation_and_channel(live, mw):
    col = live.data('mutation{createCollection(name:"falcon"){id}}', token=mw["owner"])["createCollection"]["id"]
    doc = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {"i": {"collectionId": col, "externalId": "brief", "text": "Project Falcon is led by Miriam Adler."}},
        mw["owner"],
    )["upsertDocument"]["documentId"]
    pid = live.data("query($id:ID!){document(id:$id){versions{passages{passageId}}}}", {"id": doc}, mw["owner"])[
        "document"
    ]["versions"][0]["passages"][0]["passageId"]
    secret = "Project Falcon codeword is tangerine; Falcon ships in Lisbon"
    mine = _remember(live, mw["aliceAgent"], namespace="work", key="falcon", text=secret, citations=[pid])["memory"]
    # Bob and the owner keep near-identical memories citing the same passage, so every leg
    # (BM25, cosine, entities of the cited passage) has candidates to rank
    for who in ("bobAgent", "ownerAgent"):
        _remember(
            live,
            mw[who],
            namespace="work",
            key="falcon",
            text="Project Falcon codeword is orange; Falcon in Lisbon",
            citations=[pid],
        )
    asof = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    for who in ("bob", "bobAgent", "owner", "ownerAgent"):
        rec = live.data(RECALL, {"i": {"query": "Falcon codeword tangerine Lisbon Miriam Adler"}}, mw[who])[
            "recallMemories"
        ]
        assert rec["candidates"] == 1, who  # only their own
        assert {lg["name"]: lg["status"] for lg in rec["legs"]} == {"bm25": "USED", "vector": "USED", "entity": "USED"}
        assert rec["memories"][0]["ranks"] == {"bm25": 1, "vector": 1, "entity": 1}, who  # their own, on every leg
        texts = [x["memory"]["text"] for x in rec["memories"]]
        assert texts and all("tangerine" not in t for t in texts), who
        for variables in ({}, {"i": {"namespace": "work", "key": "falcon"}}, {"i": {"asOf": asof}}):
            page = live.data(LIST, variables, mw[who])["listMemories"]
            assert mine["id"] not in {x["id"] for x in page["memories"]}, who
            assert all("tangerine" not in x["text"] for x in page["memories"]), who
        rec = live.data(RECALL, {"i": {"query": "tangerine", "asOf": asof}}, mw[who])["recallMemories"]
        assert all("tangerine" not in x["memory"]["text"] for x in rec["memories"]), who
        assert _code(live.gql(FORGET, {"i": {"memoryId": mine["id"]}}, mw[who])) == "NOT_FOUND"
    # Alice (her agent and her member token) finds it first on every leg
    rec = live.data(RECALL, {"i": {"query": "Falcon codeword tangerine Lisbon Miriam Adler"}}, mw["aliceAgent"])[
        "recallMemories"
    ]
    top = rec["memories"][0]
    assert top["memory"]["id"] == mine["id"] and top["ranks"] == {"bm25": 1, "vector": 1, "entity": 1}
    assert mine["id"] in {x["id"] for x in live.data(LIST, {}, mw["alice"])["listMemories"]["memories"]}
    assert live.data(FORGET, {"i": {"namespace": "work", "key": "falcon"}}, mw["bob"])["forgetMemory"]["deleted"] == 1


def test_as_of_then_forget_leaves_nothing(live, mw):
    _remember(live, mw["aliceAgent"], namespace="travel", key="hotel", text="Hotel in Kyoto is the Ryokan Sakura")
    between = datetime.now(UTC).isoformat()
    _remember(live, mw["aliceAgent"], namespace="travel", key="hotel", text="Hotel in Kyoto moved to Hotel Granvia")
    then = live.data(LIST, {"i": {"namespace": "travel", "asOf": between}}, mw["aliceAgent"])["listMemories"]
    assert [x["text"] for x in then["memories"]] == ["Hotel in Kyoto is the Ryokan Sakura"]
    rec = live.data(
        RECALL, {"i": {"query": "Kyoto hotel Sakura", "namespace": "travel", "asOf": between}}, mw["aliceAgent"]
    )["recallMemories"]
    assert [x["memory"]["text"] for x in rec["memories"]] == ["Hotel in Kyoto is the Ryokan Sakura"]
    assert (
        live.data(FORGET, {"i": {"namespace": "travel", "key": "hotel"}}, mw["alice"])["forgetMemory"]["deleted"] == 2
    )
    for variables in ({"i": {"namespace": "travel"}}, {"i": {"namespace": "travel", "asOf": between}}):
        assert live.data(LIST, variables, mw["aliceAgent"])["listMemories"]["memories"] == []
    for asof in (None, between):
        rec = live.data(RECALL, {"i": {"query": "Kyoto hotel Sakura Granvia", "asOf": asof}}, mw["aliceAgent"])
        assert all("Kyoto" not in x["memory"]["text"] for x in rec["recallMemories"]["memories"])

    async def left() -> int:
        db = Database(live.settings.resolved_database_url)
        try:
            async with db.session() as s:
                return len((await s.execute(select(AgentMemory.id).where(AgentMemory.namespace == "travel"))).all())
        finally:
            await db.dispose()

    assert asyncio.run(left()) == 0


def test_citations_changed_hidden_and_purged_with_the_document(live, mw):
    owner = mw["owner"]
    col = live.data('mutation{createCollection(name:"memdocs"){id}}', token=owner)["createCollection"]["id"]
    up = "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId versionId}}"
    doc = live.data(
        up, {"i": {"collectionId": col, "externalId": "policy", "text": "Travel policy: Acme Air for flights."}}, owner
    )["upsertDocument"]
    pq = "query($id:ID!){document(id:$id){versions{passages{passageId}}}}"
    pid = live.data(pq, {"id": doc["documentId"]}, owner)["document"]["versions"][0]["passages"][0]["passageId"]
    m = _remember(
        live, mw["aliceAgent"], namespace="cite", text="Book Acme Air flights", citations=[pid], collectionId=col
    )["memory"]
    assert m["sourceState"] == "CURRENT" and m["citations"][0]["passageId"] == pid
    assert len(m["citations"][0]["passageSha256"]) == 64
    # a document valid for 5 more seconds: cite it, let it expire, and the memory is hidden
    soon = datetime.now(UTC) + timedelta(seconds=5)
    old = live.data(
        up,
        {
            "i": {
                "collectionId": col,
                "externalId": "old",
                "text": "Old rule about Zeppelin travel.",
                "validFrom": "2020-01-01T00:00:00Z",
                "validTo": soon.isoformat(),
            }
        },
        owner,
    )["upsertDocument"]
    old_pid = live.data(pq, {"id": old["documentId"]}, owner)["document"]["versions"][0]["passages"][0]["passageId"]
    _remember(live, mw["aliceAgent"], namespace="cite", text="Zeppelin rule noted", citations=[old_pid])
    time.sleep(max(0.0, (soon - datetime.now(UTC)).total_seconds()) + 0.2)  # its document expires
    r = live.gql(REMEMBER, {"i": {"namespace": "cite", "text": "again", "citations": [old_pid]}}, mw["aliceAgent"])
    assert _code(r) == "BAD_USER_INPUT" and "expired" in r.json()["errors"][0]["message"]
    page = live.data(LIST, {"i": {"namespace": "cite"}}, mw["aliceAgent"])["listMemories"]
    assert [x["text"] for x in page["memories"]] == ["Book Acme Air flights"] and page["hidden"] == 1
    rec = live.data(RECALL, {"i": {"query": "Zeppelin flights", "namespace": "cite"}}, mw["aliceAgent"])[
        "recallMemories"
    ]
    assert rec["hidden"] == 1 and [x["memory"]["text"] for x in rec["memories"]] == ["Book Acme Air flights"]
    live.data(
        up,
        {
            "i": {
                "collectionId": col,
                "externalId": "policy",
                "text": "Travel policy: Acme Air for flights.\n\nTrains under 4 hours.",
            }
        },
        owner,
    )
    page = live.data(LIST, {"i": {"namespace": "cite", "collectionId": col}}, mw["aliceAgent"])["listMemories"]
    assert [x["sourceState"] for x in page["memories"]] == ["CHANGED"]
    live.data("mutation($id:ID!){deleteDocument(id:$id){deletedAt}}", {"id": doc["documentId"]}, owner)
    page = live.data(LIST, {"i": {"namespace": "cite"}}, mw["aliceAgent"])["listMemories"]
    assert page["memories"] == []

    async def cites() -> int:
        db = Database(live.settings.resolved_database_url)
        try:
            async with db.session() as s:
                return len((await s.execute(select(MemoryCitation).where(MemoryCitation.passage_id == pid))).all())
        finally:
            await db.dispose()

    assert asyncio.run(cites()) == 0


def test_list_pages_and_owner_bulk_delete(live, mw):
    for i in range(3):
        _remember(live, mw["bobAgent"], namespace="pages", text=f"bob page note {i}")
    first = live.data(LIST, {"i": {"namespace": "pages", "limit": 2}}, mw["bob"])["listMemories"]
    second = live.data(LIST, {"i": {"namespace": "pages", "limit": 2, "cursor": first["nextCursor"]}}, mw["bob"])[
        "listMemories"
    ]
    assert [x["text"] for x in first["memories"] + second["memories"]] == [f"bob page note {i}" for i in (2, 1, 0)]
    assert second["nextCursor"] is None
    assert _code(live.gql("mutation{deleteAllMemories{deleted}}", token=mw["alice"])) == "FORBIDDEN"
    assert (
        _code(live.gql("mutation{deleteAllMemories{deleted}}", token=mw["ownerAgent"])) == "AGENT_OPERATION_NOT_ALLOWED"
    )
    assert live.data("mutation{deleteAllMemories{deleted}}", token=mw["owner"])["deleteAllMemories"]["deleted"] >= 3
    for who in ("alice", "bob", "owner"):
        assert live.data(LIST, {}, mw[who])["listMemories"]["memories"] == []


def test_a_memory_never_enters_a_context_pack(live, mw):
    col = live.data('mutation{createCollection(name:"packcheck"){id}}', token=mw["owner"])["createCollection"]["id"]
    doc = live.data(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){documentId}}",
        {"i": {"collectionId": col, "externalId": "quartz", "text": "The quartz protocol is a messaging standard."}},
        mw["owner"],
    )["upsertDocument"]["documentId"]
    note = "Zebra quartz protocol listens on port 7311 says Alice"
    _remember(live, mw["aliceAgent"], namespace="proto", text=note, collectionId=col)
    pack = live.data(
        "query($i:ContextPackInput!){contextPack(input:$i){items{text trust citation{documentId}}}}",
        {"i": {"task": note}},
        mw["aliceAgent"],
    )["contextPack"]
    assert pack["items"], "the document should be found"
    assert all("Zebra" not in i["text"] and "7311" not in i["text"] for i in pack["items"])
    ids = {i["citation"]["documentId"] for i in pack["items"]}
    assert doc in ids and all(i.startswith("doc_") for i in ids)


def test_rate_limit_answers_429_with_retry_after(live, mw):
    token = _agent(live, "mem-rate", MEM_SCOPES, token=mw["owner"])
    for i in range(120):
        r = live.gql(
            'mutation($t:String!){rememberMemory(input:{namespace:"rate", text:$t}){superseded}}',
            {"t": f"rate note {i}"},
            token,
        )
        assert not r.json().get("errors"), r.json()
    r = live.gql(REMEMBER, {"i": {"namespace": "rate", "text": "one too many"}}, token)
    err = r.json()["errors"][0]["extensions"]
    assert r.status_code == 429 and err["code"] == "AGENT_MEMORY_RATE_LIMITED"
    assert 3500 <= err["retryAfter"] <= 3600 and r.headers["retry-after"] == str(err["retryAfter"])


def test_spaced_separators_are_masked_before_storing(live, mw):
    # issue 32 item 6: "536-22-1234" and "536 22 1234" were masked, "536 - 22 - 1234" stored raw
    token = _agent(live, "mem-spaced", MEM_SCOPES, token=mw["alice"])  # its own: no other test counts it
    out = _remember(
        live,
        token,
        namespace="ids",
        key="spaced",
        text="ssn 536 - 22 - 1234, card 4111 \u2013 1111 \u2013 1111 \u2013 1111, call 052 - 123 - 4567",
    )
    assert out["memory"]["text"] == "ssn [US_SSN_1], card [CARD_1], call [PHONE_1]"
    assert {x["kind"]: x["count"] for x in out["masked"]} == {"US_SSN": 1, "CARD": 1, "PHONE": 1}
    page = live.data(LIST, {"i": {"namespace": "ids", "key": "spaced"}}, token)["listMemories"]
    assert [m["text"] for m in page["memories"]] == ["ssn [US_SSN_1], card [CARD_1], call [PHONE_1]"]
