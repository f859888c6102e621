"""The Python client (``cairn_context_client``, the clients/python distribution) and its LangChain /
LlamaIndex retrievers against the live server (SQLite): packs (plain, NDJSON stream, GraphQL
subscription), documents, memory, decisions and ontology calls, and errors as exceptions with
code, field, limit and trace id."""

from __future__ import annotations

import asyncio

import pytest

from cairn.app.core.db import Database
from cairn.app.identity import service as identity
from cairn_context_client import AsyncCairnClient, CairnAPIError, CairnClient
from tests import factories

TASK = "How does reciprocal rank fusion combine the BM25 and dense rankings?"


async def _workspace(url: str) -> dict[str, str]:
    db = Database(url)
    out: dict[str, str] = {}
    try:
        async with db.session() as s:
            ws = await identity.create_workspace(s, name="clientco")
            m, t = await identity.create_member(s, workspace_id=ws.id, name="owner-client", role="owner")
            out["owner"] = t.token
            _c, out["agent"] = await factories.credential(
                s,
                creator=factories.member_principal(m),
                name="client-agent",
                scopes=["context:read", "memory:read", "memory:write", "decisions:run"],
            )
    finally:
        await db.dispose()
    return out


@pytest.fixture(scope="module")
def clientco(live) -> dict[str, str]:
    """A workspace with memory on and an agent holding memory and decision scopes."""
    t = asyncio.run(_workspace(live.settings.resolved_database_url))
    live.data("mutation{setMemorySettings(enabled:true, retentionDays:30){enabled}}", token=t["owner"])
    return t


def _verify(live, item: dict) -> None:
    """The item's citation points at its exact text in the cited version."""
    c = item["citation"]
    doc = live.data(
        "query($id:ID!){document(id:$id){versions{id text}}}", {"id": c["documentId"]}, live.tokens["agent"]
    )
    text = next(v["text"] for v in doc["document"]["versions"] if v["id"] == c["versionId"])
    assert text[c["start"] : c["end"]] == item["text"]


def test_sync_pack_and_ndjson_stream_agree(live):
    with CairnClient(live.url, live.tokens["agent"]) as cairn:
        pack = cairn.context_pack(TASK, max_tokens=512, retrieval="LEXICAL")
        events = list(cairn.stream_context_pack(TASK, max_tokens=512, retrieval="LEXICAL"))
    assert pack["items"] and pack["tokensUsed"] <= 512
    _verify(live, pack["items"][0])
    assert [e["type"] for e in events] == ["header"] + ["item"] * (len(events) - 2) + ["footer"]
    assert [e["text"] for e in events[1:-1]] == [i["text"] for i in pack["items"]]
    assert events[0]["traceId"]
    # the items name their document by the caller's key, and document() reads it back
    top = pack["items"][0]
    assert (top["externalId"], top["citation"]["documentId"]) == ("packs", live.ids["doc:packs"])
    with CairnClient(live.url, live.tokens["agent"]) as cairn:
        doc = cairn.document(top["citation"]["documentId"])
    assert (doc["externalId"], doc["title"]) == ("packs", "Context packs")
    version = next(v for v in doc["versions"] if v["id"] == top["citation"]["versionId"])
    assert version["text"][top["citation"]["start"] : top["citation"]["end"]] == top["text"]


def test_async_pack_ndjson_and_subscription_agree(live):
    async def go():
        async with AsyncCairnClient(live.url, live.tokens["agent"]) as cairn:
            pack = await cairn.context_pack(TASK, max_tokens=512, retrieval="LEXICAL")
            nd = [e async for e in cairn.stream_context_pack(TASK, max_tokens=512, retrieval="LEXICAL")]
            ws = [e async for e in cairn.subscribe_context_pack(TASK, max_tokens=512, retrieval="LEXICAL")]
            return pack, nd, ws

    pack, nd, ws = asyncio.run(go())
    texts = [i["text"] for i in pack["items"]]
    assert [e["text"] for e in nd if e["type"] == "item"] == texts
    assert [e["text"] for e in ws if e["type"] == "item"] == texts
    assert (ws[0]["type"], ws[-1]["type"]) == ("header", "footer")
    assert ws[-1]["tokensUsed"] == pack["tokensUsed"]


def test_errors_are_exceptions_with_code_field_limit_and_trace(live):
    with CairnClient(live.url, live.tokens["agent"]) as cairn:
        with pytest.raises(CairnAPIError) as e:
            cairn.context_pack(TASK, max_tokens=100)
        assert (e.value.code, e.value.field, e.value.limit) == (
            "BAD_USER_INPUT",
            "input.budget.maxTokens",
            "256-32000",
        )
        assert e.value.trace_id and e.value.trace_id.startswith("trace_")
        # the NDJSON route refuses before streaming, with its HTTP status
        with pytest.raises(CairnAPIError) as e:
            list(cairn.stream_context_pack(TASK, max_tokens=100))
        assert (e.value.code, e.value.field, e.value.status) == ("BAD_USER_INPUT", "input.budget.maxTokens", 400)
        # outside the credential's scopes
        with pytest.raises(CairnAPIError) as e:
            cairn.remember("notes", "a note")
        assert e.value.code == "AGENT_SCOPE_MISSING"

    async def sub():
        async with AsyncCairnClient(live.url, live.tokens["agent"]) as cairn:
            return [e async for e in cairn.subscribe_context_pack(TASK, max_tokens=100)]

    with pytest.raises(CairnAPIError) as e:
        asyncio.run(sub())
    assert (e.value.code, e.value.field) == ("BAD_USER_INPUT", "input.budget.maxTokens")
    with CairnClient(live.url, "ck_0000000000000000_" + "x" * 43) as bad, pytest.raises(CairnAPIError) as e:
        bad.context_pack(TASK)
    assert e.value.code == "UNAUTHENTICATED" and e.value.status == 401

    async def bad_stream():
        async with AsyncCairnClient(live.url, "ck_0000000000000000_" + "x" * 43) as bad:
            return [e async for e in bad.stream_context_pack(TASK)]

    with pytest.raises(CairnAPIError) as e:
        asyncio.run(bad_stream())
    assert (e.value.code, e.value.status) == ("UNAUTHENTICATED", 401) and e.value.trace_id
    # a response that is not Cairn's JSON (an unknown route) is an HTTP_ERROR with its status
    with CairnClient(live.url, live.tokens["agent"]) as cairn, pytest.raises(CairnAPIError) as e:
        cairn.get_decision("../../no-such-route")
    assert e.value.status == 404


def test_memory_decisions_and_ontology(live, clientco):
    with CairnClient(live.url, clientco["agent"]) as cairn:
        kept = cairn.remember("trips", "The user flies to Lisbon in May.", key="next-trip")
        assert kept["memory"]["version"] == 1
        recalled = cairn.recall("When does the user fly to Lisbon?", limit=5)
        assert recalled["memories"][0]["memory"]["id"] == kept["memory"]["id"]
        assert cairn.list_memories(namespace="trips")["memories"][0]["key"] == "next-trip"
        assert cairn.forget(namespace="trips", key="next-trip") == {"deleted": 1}
        with pytest.raises(CairnAPIError) as e:
            cairn.create_decision({"state": {"a": 1}})
        assert (e.value.code, e.value.status) == ("invalid_decision_input", 400)
        assert e.value.field
        with pytest.raises(CairnAPIError) as e:
            cairn.get_decision("dec_missing")
        assert e.value.status == 404
        assert cairn.knowledge_networks() == []

    async def go():
        async with AsyncCairnClient(live.url, clientco["agent"]) as cairn:
            kept = await cairn.remember("trips", "The user likes window seats.")
            found = await cairn.recall("window seats")
            return kept, found, await cairn.forget(kept["memory"]["id"])

    kept, found, gone = asyncio.run(go())
    assert found["memories"][0]["memory"]["id"] == kept["memory"]["id"] and gone == {"deleted": 1}


def test_langchain_retriever_documents_carry_citations(live):
    from langchain_core.documents import Document

    from cairn_context_client.langchain import CairnRetriever

    retriever = CairnRetriever(base_url=live.url, token=live.tokens["agent"], max_tokens=512, retrieval="LEXICAL")
    docs = retriever.invoke(TASK)
    assert docs and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    m = top.metadata
    # source: the document's external id (the caller's key), the doc_… id beside it
    assert (m["source"], m["document_id"], m["title"]) == ("packs", live.ids["doc:packs"], "Context packs")
    _verify(
        live,
        {
            "text": top.page_content,
            "citation": {
                "documentId": m["document_id"],
                "versionId": m["version_id"],
                "start": m["start"],
                "end": m["end"],
            },
        },
    )
    assert len(m["sha256"]) == 64 and m["pack_id"]
    adocs = asyncio.run(retriever.ainvoke(TASK))
    assert [d.page_content for d in adocs] == [d.page_content for d in docs]


def test_llamaindex_retriever_nodes_carry_citations(live):
    from cairn_context_client.llamaindex import CairnLlamaRetriever

    retriever = CairnLlamaRetriever(live.url, live.tokens["agent"], max_tokens=512, retrieval="LEXICAL")
    nodes = retriever.retrieve(TASK)
    assert nodes
    top = nodes[0]
    m = top.node.metadata
    assert top.node.node_id == m["passage_id"] and top.score == m["score"]
    assert (m["source"], m["document_id"], m["title"]) == ("packs", live.ids["doc:packs"], "Context packs")
    _verify(
        live,
        {
            "text": top.node.get_content(),
            "citation": {
                "documentId": m["document_id"],
                "versionId": m["version_id"],
                "start": m["start"],
                "end": m["end"],
            },
        },
    )
    anodes = asyncio.run(retriever.aretrieve(TASK))
    assert [n.node.node_id for n in anodes] == [n.node.node_id for n in nodes]
