"""Workspaces are sealed from each other (SPEC §1): nothing of workspace A is reachable from
workspace B, by query, pack, mutation, subscription or the NDJSON route."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.graphql.pack_calls import PACK_QUERY, _stream, error_of

pytestmark = pytest.mark.both_backends  # every read filters by workspace in SQL


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
