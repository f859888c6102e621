"""MCP tool calls count against the same per-credential rate limits as GraphQL (a server with
tiny limits, SQLite; the counters on both databases: test_rate_limits.py): packs over MCP and
over GraphQL share the ``packs`` class."""

from __future__ import annotations

from tests.graphql.test_mcp import call
from tests.graphql.test_rate_limits import PACK, RETRY_AFTER, SCOPES, limited

__all__ = ["limited"]  # the server fixture, shared with test_rate_limits


def test_mcp_packs_share_the_graphql_packs_limit(limited):
    token = limited.data(
        "mutation($i:CreateAgentCredentialInput!){createAgentCredential(input:$i){token}}",
        {"i": {"name": "mcp-limited", "scopes": SCOPES, "expiresInDays": 5}},
        limited.tokens["admin"],
    )["createAgentCredential"]["token"]
    args = {"task": "billing region", "retrieval": "LEXICAL"}
    assert limited.gql(PACK, token=token).status_code == 200
    assert limited.gql(PACK, token=token).status_code == 200
    assert not call(limited, token, "context_pack", args).isError
    r = call(limited, token, "context_pack", args)
    err = r.structuredContent["error"]
    assert (err["code"], err["rateClass"], err["limit"]) == ("RATE_LIMITED", "packs", 3)
    assert err["retryAfter"] == RETRY_AFTER
    assert limited.gql(PACK, token=token).status_code == 429  # and GraphQL sees the MCP calls
