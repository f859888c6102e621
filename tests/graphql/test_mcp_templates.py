"""``run_query_template`` over MCP (streamable HTTP, the SDK's own client) against the same
server and tiny business database as tests/graphql/test_templates.py: the rows, TOON and coded
parameter errors of ``runQueryTemplate``."""

from __future__ import annotations

from toon_format import decode

from tests.graphql.test_mcp import ENVELOPE_META, call
from tests.graphql.test_templates import RUN, TEMPLATE, _approved, served

__all__ = ["served"]  # the server fixture, shared with test_templates


def test_an_approved_template_runs_over_mcp_as_over_graphql(served):
    template_id = _approved(served, {**TEMPLATE, "name": "mcp_items"})
    agent = served.tokens["agent"]
    params = {"names": ["apple", "cherry", "it's"], "since": "2024-02-01"}
    r = call(served, agent, "run_query_template", {"templateId": template_id, "parameters": params})
    assert not r.isError, r.structuredContent
    out = r.structuredContent
    gql = served.data(RUN, {"t": template_id, "p": params}, agent)["runQueryTemplate"]
    assert out["rows"] == gql["rows"] and [x["name"] for x in out["rows"]] == ["cherry", "it's"]
    assert out["columns"] == gql["columns"] and (out["rowCount"], out["truncated"]) == (2, False)
    assert "sql" not in out and r.meta[ENVELOPE_META]["coordinate"] == "G1.U3.P1.Z7.A2"
    toon = call(
        served, agent, "run_query_template", {"templateId": template_id, "parameters": params, "responseFormat": "TOON"}
    ).structuredContent
    assert toon["rows"] is None and decode(toon["toon"])["rows"] == out["rows"]
    # a bad parameter: the same code, field and limit as GraphQL; nothing runs
    bad = {"names": ["a", "b", "c", "d"]}
    err = call(served, agent, "run_query_template", {"templateId": template_id, "parameters": bad}).structuredContent
    body = served.gql(RUN, {"t": template_id, "p": bad}, agent).json()["errors"][0]["extensions"]
    assert (err["error"]["code"], err["error"]["field"], err["error"].get("limit")) == (
        body["code"],
        body["field"],
        body.get("limit"),
    )
    assert body["code"] == "QUERY_PARAMETER_INVALID"
    # a context:read credential without queries:run is refused before anything runs
    r = call(served, served.tokens["reader"], "run_query_template", {"templateId": template_id, "parameters": params})
    assert r.structuredContent["error"]["code"] == "AGENT_SCOPE_MISSING"
