"""Size of the MCP ``tools/list`` answer per credential: ``python -m bench.mcp_listing``.

The listing is part of every prompt of an MCP host, so its size is a cost the model pays on
each turn. Prints, for all tools and for the tools an agent credential of each scope set may
call (:func:`app.mcp.server.visible_tools`, the rule ``tools/list`` applies), the number of
tools and the characters of the ``ListToolsResult`` as the SDK serialises it (compact JSON,
``by_alias``, no nulls), then each tool's share. No server, no database: a principal is built
from the scopes with its creator an owner and the default responsibility profile.
"""

from __future__ import annotations

from mcp import types

from cairn.app.governance import ROLE_PERMISSIONS, Principal, capabilities_for_scopes
from cairn.app.mcp import TOOLS, ToolSpec
from cairn.app.mcp.server import tool_entry, visible_tools

CREDENTIALS = (
    ("context:read",),
    ("context:read", "queries:run"),
    ("context:read", "memory:read", "memory:write"),
    ("context:read", "queries:run", "gaps:report", "memory:read", "memory:write", "decisions:run"),
)


def listing_chars(tools: list[ToolSpec]) -> int:
    """Characters of the ``tools/list`` result holding ``tools`` (compact JSON, as sent)."""
    result = types.ServerResult(types.ListToolsResult(tools=[tool_entry(t) for t in tools]))
    return len(result.model_dump_json(by_alias=True, exclude_none=True))


def agent(scopes: tuple[str, ...]) -> Principal:
    """An agent credential with ``scopes``, created by an owner, default profile."""
    return Principal(
        kind="agent",
        id="cred_bench",
        workspace_id="ws_bench",
        permissions=frozenset(ROLE_PERMISSIONS["owner"]),
        member_id="usr_bench",
        role="owner",
        scopes=frozenset(scopes),
        profile={"grantedCapabilities": capabilities_for_scopes(set(scopes))},
    )


def main() -> None:
    every = list(TOOLS.values())
    print(f"all tools: {len(every)} tools, {listing_chars(every):,} characters")
    for scopes in CREDENTIALS:
        tools = visible_tools(agent(scopes))
        print(f"{' + '.join(scopes)}: {len(tools)} tools, {listing_chars(tools):,} characters")
    print("per tool:")
    for t in every:
        print(f"  {t.name:24} {listing_chars([t]):6,}")


if __name__ == "__main__":
    main()
