"""Hostile and malformed HTTP input: coded, enveloped errors, never a 500 or a stack trace."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests import local_http
from tests.graphql import ws_calls
from tests.graphql.pack_calls import PACK_QUERY, error_of


def post(live, content: bytes, *, token: str | None = None, ctype: str = "application/json") -> httpx.Response:
    headers = {"Content-Type": ctype}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return local_http.post(f"{live.url}/graphql", content=content, headers=headers, timeout=30)


@pytest.mark.parametrize(
    "content,ctype,status",
    [
        (b'"x"', "application/json", 400),
        (b"null", "application/json", 400),
        (b"{not json", "application/json", 400),
        (b"\xff\xfe{}", "application/json", 400),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", 400),
        (b'[{"query":"{viewer{kind}}"}]', "application/json", 400),
        (b'{"query":""}', "application/json", 400),
        (b'{"query":"{viewer{kind}}","variables":[1]}', "application/json", 400),
        (b"query=%7Bviewer%7Bkind%7D%7D", "application/x-www-form-urlencoded", 415),
    ],
)
def test_malformed_bodies_are_coded_and_enveloped(live, content, ctype, status):
    r = post(live, content, token=live.tokens["agent"], ctype=ctype)
    assert r.status_code == status, r.text[:300]
    body = r.json()
    assert body["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert body["extensions"]["envelope"]["status"] == "ERROR"
    assert "Traceback" not in r.text


def test_oversized_bodies_are_refused_before_reading_them_whole(live):
    big = b'{"query":"{viewer{kind}}","variables":{"pad":"' + b"x" * (300 * 1024) + b'"}}'
    r = post(live, big, token=live.tokens["agent"])
    assert r.status_code == 413 and error_of(r)["extensions"]["limit"] == 256 * 1024
    r = local_http.post(
        f"{live.url}/v1/context-packs/stream",
        content=b'{"task":"' + b"x" * 70_000 + b'"}',
        headers={"Authorization": f"Bearer {live.tokens['agent']}"},
        timeout=30,
    )
    assert r.status_code == 413


def test_unauthenticated_requests_are_refused_before_parsing(live):
    heavy = '{"query":"{ ' + "viewer{kind} " * 400 + '}"}'
    r = post(live, heavy.encode())
    assert r.status_code == 401 and error_of(r)["extensions"]["code"] == "UNAUTHENTICATED"
    assert r.headers["www-authenticate"] == 'Bearer realm="cairn"'
    r = post(live, b'{"query":"{ __schema { types { name } } }"}')
    assert r.status_code == 401
    r = local_http.post(f"{live.url}/v1/context-packs/stream", json={"task": ""}, timeout=30)
    assert r.status_code == 401  # auth before input validation


@pytest.mark.parametrize(
    "variables,field_hint",
    [
        ({"i": {"task": "x", "budget": {"maxTokens": "300"}}}, "maxTokens"),
        ({"i": {"task": "x", "budget": {"maxTokens": 300.5}}}, "maxTokens"),
        ({"i": {"task": "x", "foo": 1}}, "foo"),
        ({"i": {"task": "x", "retrieval": "SPARSE"}}, "retrieval"),
        ({"i": {"task": "x", "asOf": {"validTime": "yesterday"}}}, "validTime"),
        ({}, "$i"),
    ],
)
def test_variable_coercion_errors_are_bad_user_input(live, variables, field_hint):
    r = live.gql(PACK_QUERY, variables, live.tokens["agent"])
    err = error_of(r)
    assert err["extensions"]["code"] == "BAD_USER_INPUT" and r.status_code == 400
    assert field_hint in err["message"]


def test_unpaired_surrogates_are_refused_up_front(live):
    r = post(
        live,
        b'{"query":"query($i:ContextPackInput!){contextPack(input:$i){packId}}",'
        b'"variables":{"i":{"task":"a \\ud800 b"}}}',
        token=live.tokens["agent"],
    )
    assert error_of(r)["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.task"}
    r = live.gql(
        "mutation($i:UpsertDocumentInput!){upsertDocument(input:$i){status}}",
        {
            "i": {
                "collectionId": live.ids["coll:finance"],
                "externalId": "naive",
                "text": "t",
                "validFrom": "2025-01-01T00:00:00",
            }
        },
        live.tokens["owner"],
    )
    assert error_of(r)["extensions"]["field"] == "input.validFrom"


def test_at_most_two_packs_per_request(live):
    q = (
        "{ "
        + " ".join(f'p{i}: contextPack(input:{{task:"x", retrieval: LEXICAL}}) {{ packId }}' for i in range(3))
        + " }"
    )
    r = live.gql(q, None, live.tokens["agent"])
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and "at most 2 contextPack" in err["message"]


def test_the_last_owner_cannot_leave_or_step_down(live):
    me = live.data("{viewer{id}}", None, live.tokens["ownerB"])["viewer"]["id"]
    r = live.gql('mutation($m:ID!){setMemberRole(memberId:$m, role:"viewer"){role}}', {"m": me}, live.tokens["ownerB"])
    assert error_of(r)["extensions"]["code"] == "LAST_OWNER"


def test_profiles_only_name_known_capabilities(live):
    r = live.gql(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}",
        {"i": {"name": "x", "expiresInDays": 1, "profile": {"suggestOnly": ["context:pakc"]}}},
        live.tokens["owner"],
    )
    err = error_of(r)
    assert err["extensions"]["code"] == "BAD_USER_INPUT" and err["extensions"]["field"] == "profile.suggestOnly"


def test_a_subscription_over_post_is_a_coded_400_naming_the_streaming_transports(live):
    r = live.gql('subscription { contextPackStream(input: {task: "x"}) { __typename } }', token=live.tokens["owner"])
    assert r.status_code == 400
    err = r.json()["errors"][0]
    assert err["extensions"]["code"] == "BAD_REQUEST"
    assert "graphql-transport-ws" in err["message"] and "/v1/context-packs/stream" in err["message"]
    assert r.json()["extensions"]["envelope"]["status"] == "ERROR"


def test_several_operations_need_an_operation_name_and_nothing_runs(live):
    doc = 'mutation M { createCollection(name: "never-made") { id } } query Q { __typename }'
    r = live.gql(doc, token=live.tokens["owner"])
    assert r.status_code == 400
    assert "operationName" in r.json()["errors"][0]["message"]
    names = [c["name"] for c in live.data("{ collections { name } }", token=live.tokens["owner"])["collections"]]
    assert "never-made" not in names
    named = local_http.post(
        f"{live.url}/graphql",
        json={"query": doc, "operationName": "Q"},
        headers={"Authorization": f"Bearer {live.tokens['owner']}"},
        timeout=30,
    )
    assert named.json()["data"] == {"__typename": "Query"}


@pytest.mark.parametrize(
    "content,ctype,status,field",
    [
        (b'{"task":"x","task":"y"}', "application/json", 400, "task"),
        (b'{"task":"x"}', "text/plain", 415, None),
        (b'{"task":"x"}', None, 415, None),
        (b"task=x", "application/x-www-form-urlencoded", 415, None),
    ],
)
def test_the_ndjson_route_takes_one_json_object_only(live, content, ctype, status, field):
    headers = {"Authorization": f"Bearer {live.tokens['agent']}"}
    if ctype:
        headers["Content-Type"] = ctype
    r = local_http.post(f"{live.url}/v1/context-packs/stream", content=content, headers=headers, timeout=30)
    assert r.status_code == status
    err = r.json()["errors"][0]
    assert err["extensions"]["code"] == ("BAD_USER_INPUT" if status == 400 else "BAD_REQUEST")
    assert err["extensions"].get("field") == field


def _nested_fragments(n: int) -> str:
    frags = ["fragment F0 on Query { __typename }"]
    frags += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, n)]
    return " ".join(frags) + f" query {{ ...F{n - 1} }}"


def test_nested_fragment_documents_are_refused_over_http(live):
    # 2^29 selections in 1.2 KB: the expanding limiters blocked the event loop for ~1 h.
    r = live.gql(_nested_fragments(30), None, live.tokens["agent"])
    assert r.status_code == 400
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert "the limit is 10,000" in err["message"]
    r = local_http.get(
        f"{live.url}/graphql",
        params={"query": _nested_fragments(30)},
        headers={"Authorization": f"Bearer {live.tokens['agent']}"},
        timeout=30,
    )
    assert r.status_code == 400 and "the limit is 10,000" in error_of(r)["message"]


async def test_nested_fragment_documents_are_refused_over_the_websocket(live):
    import json

    async with ws_calls.acked(live.ws_url, live.tokens["agent"]) as ws:
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": _nested_fragments(30)}}))
        msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert msg["type"] == "error" and msg["id"] == "1"
        assert "the limit is 10,000" in msg["payload"][0]["message"]


@pytest.mark.parametrize(
    "query",
    [
        'query($b:Int){ contextPack(input:{task:"global", budget:{maxTokens:$b}}) { tokensUsed } }',
        'query($b:RetrievalMode){ contextPack(input:{task:"global", retrieval:$b}) { tokensUsed } }',
    ],
)
def test_a_null_variable_for_a_non_null_argument_with_a_default_is_bad_input(live, query):
    # graphql-core raises this while coercing arguments at execution; it was masked as an
    # INTERNAL_SERVER_ERROR with HTTP 200.
    r = live.gql(query, {"b": None}, live.tokens["agent"])
    err = error_of(r)
    assert r.status_code == 400 and err["extensions"]["code"] == "BAD_USER_INPUT"
    assert "Expected variable '$b' provided to non-null type" in err["message"] and "not to be None" in err["message"]


async def test_a_syntax_error_on_the_websocket_fails_that_operation_only(live):
    # Strawberry closed the whole socket with 4400 and a bare reason, losing other operations.
    import json

    async with ws_calls.acked(live.ws_url, live.tokens["agent"]) as ws:
        await ws.send(json.dumps({"id": "2", "type": "subscribe", "payload": {"query": "{"}}))
        msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert msg["type"] == "error" and msg["id"] == "2"
        ext = msg["payload"][0]["extensions"]
        assert ext["code"] == "GRAPHQL_PARSE_FAILED" and ext["envelope"]["status"] == "ERROR"
        await ws.send(json.dumps({"id": "3", "type": "subscribe", "payload": {"query": "{ viewer { kind } }"}}))
        msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
        assert msg["type"] == "next" and msg["id"] == "3" and msg["payload"]["data"]["viewer"]["kind"] == "agent"
