"""The envelope (SPEC §9): trace ids carried through (x-cairn-trace, traceparent), the envelope
on parse and validation errors, and the document token limit."""

from __future__ import annotations

from tests.graphql.pack_calls import PACK, error_of


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


def test_document_token_limit(live):
    huge = "{ " + " ".join(f"a{i}: viewer {{ kind id role }}" for i in range(25)) + " " + "viewer { kind } " * 500 + "}"
    r = live.gql(huge, None, live.tokens["agent"])
    err = error_of(r)
    assert err["extensions"]["code"] == "GRAPHQL_PARSE_FAILED" and "token" in err["message"].lower()
