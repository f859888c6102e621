"""Document size on every channel (issue 32 item 1): a document's count of operations and
definitions, and its length, are bounded before it is validated (or, for its length, lexed),
on ``POST``, ``GET`` and the WebSocket alike, with a coded error naming the limit.

The attack: ~400 ``query qN { __typename }`` operations sent with ``operationName`` — within the
2,000-token limit, yet every operation was validated (150–2,000 ms of event loop per request
under load). Each refusal here is also checked to leave the channel usable.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from cairn.resolvers.document_size import MAX_DEFINITIONS, MAX_DOCUMENT_CHARS, MAX_OPERATIONS
from tests import local_http
from tests.graphql.pack_calls import error_of
from tests.graphql.test_front_door import auth, ws_session

OPERATIONS_LIMIT = f"the limit is {MAX_OPERATIONS} operations per document"
DEFINITIONS_LIMIT = f"the limit is {MAX_DEFINITIONS} per document"
LENGTH_LIMIT = f"the limit is {MAX_DOCUMENT_CHARS:,} characters per document"


def many_operations(n: int) -> str:
    """``n`` operations ``query qI { __typename }`` (5 tokens each: 400 fit the token limit)."""
    return " ".join(f"query q{i} {{ __typename }}" for i in range(n))


def many_fragments(n: int) -> str:
    """``n`` fragments on Query, all spread by one operation (valid but for their count)."""
    frags = " ".join(f"fragment F{i} on Query {{ __typename }}" for i in range(n))
    return frags + " query Q { " + " ".join(f"...F{i}" for i in range(n)) + " }"


def long_document(chars: int) -> str:
    """A valid one-field document padded to ``chars`` characters by a comment (no tokens)."""
    body = "{ viewer { kind } }"
    return "#" + "x" * (chars - len(body) - 2) + "\n" + body


async def ws_operation(ws, op_id: str, query: str, operation_name: str | None = None) -> dict:
    """Send one operation (with ``operationName``) and return its first message."""
    payload = {"query": query, "variables": {}}
    if operation_name is not None:
        payload["operationName"] = operation_name
    await ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": payload}))
    msg = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert msg.get("id") == op_id, msg
    return msg


def assert_refused(r, limit_text: str) -> None:
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and limit_text in err["message"], err
    assert r.json()["extensions"]["envelope"]["status"] == "ERROR"


def test_four_hundred_operations_with_an_operation_name_are_refused_on_post_and_get(live):
    doc = many_operations(399)
    r = local_http.post(
        f"{live.url}/graphql", json={"query": doc, "operationName": "q7"}, headers=auth(live), timeout=10
    )
    assert_refused(r, OPERATIONS_LIMIT)
    assert "399 operations" in error_of(r)["message"]
    r = local_http.get(
        f"{live.url}/graphql",
        params={"query": many_operations(60), "operationName": "q7"},
        headers=auth(live),
        timeout=10,
    )
    assert_refused(r, OPERATIONS_LIMIT)
    # at the limit, the selected operation runs
    r = local_http.post(
        f"{live.url}/graphql",
        json={"query": many_operations(MAX_OPERATIONS), "operationName": "q7"},
        headers=auth(live),
        timeout=10,
    )
    assert r.status_code == 200 and r.json()["data"] == {"__typename": "Query"}, r.text


def test_many_fragments_are_refused_and_the_limit_admits_a_real_document(live):
    assert_refused(live.gql(many_fragments(MAX_DEFINITIONS + 10), None, live.tokens["agent"]), DEFINITIONS_LIMIT)
    r = live.gql(many_fragments(MAX_DEFINITIONS - 1), None, live.tokens["agent"])
    assert r.status_code == 200 and r.json()["data"] == {"__typename": "Query"}, r.text


def test_a_long_document_is_refused_before_it_is_lexed(live):
    r = live.gql(long_document(MAX_DOCUMENT_CHARS + 1), None, live.tokens["agent"])
    assert_refused(r, LENGTH_LIMIT)
    assert f"{MAX_DOCUMENT_CHARS + 1:,} characters" in error_of(r)["message"]
    ok = live.data(long_document(MAX_DOCUMENT_CHARS), None, live.tokens["agent"])
    assert ok["viewer"]["kind"] == "agent"


@pytest.mark.parametrize(
    ("query", "limit_text"),
    [
        (many_operations(399), OPERATIONS_LIMIT),
        (many_fragments(MAX_DEFINITIONS + 10), DEFINITIONS_LIMIT),
        # 4 MiB: within the WebSocket's 16 MiB frame, ~1–2.6 s of lexing before the limit
        (long_document(4 * 1024 * 1024), LENGTH_LIMIT),
    ],
    ids=["operations", "fragments", "length"],
)
async def test_the_same_documents_are_refused_over_the_websocket(live, query, limit_text):
    ws = await ws_session(live, auth(live))
    try:
        name = "q7" if query.startswith("query q0") else None
        msg = await ws_operation(ws, "big", query, name)
        assert msg["type"] == "error", msg
        err = msg["payload"][0]
        assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED" and limit_text in err["message"], err
        assert err["extensions"]["envelope"]["status"] == "ERROR"
        ok = await ws_operation(ws, "ok", "query Q { viewer { kind } }", "Q")  # the socket stays usable
        assert ok["type"] == "next" and ok["payload"]["data"]["viewer"]["kind"] == "agent"
    finally:
        await ws.close()


def test_the_multipart_subscription_transport_is_bounded_too(live):
    # Strawberry streams a subscription over POST when the client accepts multipart/mixed;
    # that path parses through the same schema step as the others
    doc = "#" + "x" * MAX_DOCUMENT_CHARS + '\nsubscription { contextPackStream(input: {task: "x"}) { __typename } }'
    r = local_http.post(
        f"{live.url}/graphql",
        json={"query": doc},
        headers={**auth(live), "Accept": "multipart/mixed;subscriptionSpec=1.0,application/json"},
        timeout=10,
    )
    assert LENGTH_LIMIT in r.text, (r.status_code, r.headers.get("content-type"), r.text[:500])
    assert "GRAPHQL_VALIDATION_FAILED" in r.text
