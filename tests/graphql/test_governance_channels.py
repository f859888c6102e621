"""The operation × principal table's outcomes end to end, through the live server: one GraphQL
call over HTTP per outcome code of the table (and OK), the subscription over a real WebSocket
and the NDJSON route by principal. The whole table (every operation × principal) runs in
process in tests/graphql/test_governance_operations.py; MCP's refusals (same codes) are in
tests/graphql/test_mcp.py and tests/graphql/test_mcp_library.py."""

from __future__ import annotations

import pytest

from tests import local_http
from tests.graphql.conftest import _agent
from tests.graphql.pack_calls import _stream
from tests.graphql.test_governance_operations import CALLS, EXPECTED, PRINCIPALS, SM, _resolve, assert_outcome

# one cell of the table per outcome: (operation, principal); the expected code is the table's
SAMPLE = [
    ("collections", "viewer"),  # OK
    ("collections", "none"),  # UNAUTHENTICATED (refused at the HTTP gate, before the document is read)
    ("members", "viewer"),  # FORBIDDEN
    ("members", "a:context:read"),  # AGENT_OPERATION_NOT_ALLOWED
    ("collections", "a:queries:run"),  # AGENT_SCOPE_MISSING
    ("deleteDocument", "editor"),  # NOT_FOUND (authorised; the handler finds no such document)
    ("rememberMemory", "editor"),  # AGENT_MEMORY_DISABLED (authorised; memory is off in workspace A)
]
SAMPLE_CASES = [(op, who, EXPECTED[op][PRINCIPALS.index(who)]) for op, who in SAMPLE]


@pytest.fixture(scope="module")
def tokens(live):
    out = {"none": None}
    for role in ("viewer", "editor", "admin", "owner"):
        out[role] = live.tokens[role]
    for scope in ("context:read", "queries:run", "memory:read"):
        out[f"a:{scope}"] = _agent(live, f"channels-{scope}", [scope])
    return out


def test_the_sample_has_every_outcome_of_the_table():
    assert {e for _op, _who, e in SAMPLE_CASES} == {e for row in EXPECTED.values() for e in row}


@pytest.mark.parametrize("op,who,expected", SAMPLE_CASES, ids=[f"{o}-{w}" for o, w, _ in SAMPLE_CASES])
def test_one_call_per_outcome_over_http(live, tokens, op, who, expected):
    query, variables = CALLS[op]
    r = live.gql(query, _resolve(live.ids, variables), tokens[who])
    assert_outcome(r.status_code, r.json(), expected)


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
