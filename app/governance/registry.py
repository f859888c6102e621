"""The registry: the single source of truth for every operation Cairn serves.

:data:`REGISTRY` maps each operation's name to its :class:`~app.governance.operation.Operation`
(coordinate, capability, permissions, scope, rate-limit class): the GraphQL root fields
(:mod:`app.governance.operations_graphql`), then the HTTP routes and MCP tools
(:mod:`app.governance.operations_http_mcp`). A name registered twice fails at import.
"""

from __future__ import annotations

from cairn.app.governance.operation import Operation
from cairn.app.governance.operations_graphql import GRAPHQL_OPERATIONS
from cairn.app.governance.operations_http_mcp import HTTP_ROUTES, MCP_TOOLS

PROFILE_LISTS = (
    "grantedCapabilities",
    "naturalAvoidances",
    "suggestOnly",
    "reconfirmBefore",
    "hardBoundaries",
)

_OPS = [*GRAPHQL_OPERATIONS, *HTTP_ROUTES, *MCP_TOOLS]

REGISTRY: dict[str, Operation] = {}
for _op in _OPS:
    if _op.name in REGISTRY:
        raise RuntimeError(f"operation {_op.name!r} registered twice")
    REGISTRY[_op.name] = _op


def get_operation(name: str) -> Operation:
    """The registered operation called ``name``.

    Raises:
        KeyError: not registered (a programming error caught by the contract test).
    """
    return REGISTRY[name]


def capabilities_for_scopes(scopes: set[str] | frozenset[str]) -> list[str]:
    """Capabilities opened by a set of agent scopes (the default ``grantedCapabilities``)."""
    caps = {
        op.capability
        for op in REGISTRY.values()
        if op.auth == "required" and (op.scope == "*" or (op.scope is not None and op.scope in scopes))
    }
    return sorted(caps)
