"""The registry's HTTP routes (universe ``U2``) and MCP tools (universe ``U3``).

Routes are named ``METHOD path``; ``auth="none"`` routes take no credential (the GraphQL and
MCP endpoints govern each call as its own operation). Each MCP tool (``mcp.<tool>``) carries
the capability, permissions and scope of the GraphQL operation it maps to.
"""

from __future__ import annotations

from cairn.app.governance.operation import DECIDE, DOC_READ, QUERIES, READ, Operation
from cairn.app.governance.policies import (
    CITATION,
    COLLECTIONS,
    FACTS,
    FIELDS,
    MCP_MEMORY_READ,
    MCP_MEMORY_WRITE,
    MCP_PACK,
    ONTOLOGY_REFUSED,
    OWN_RECORDS,
    PACK,
    PASSAGE,
    REPLAY,
    SET_READ,
    SETS_LIST,
    TEMPLATE_RUN,
)

HTTP_ROUTES = [
    Operation(
        "POST /v1/context-packs/stream", "http", "G1.U2.P1.Z1.A1", "context:pack", READ, "context:read", binding=PACK
    ),
    Operation(
        "POST /v1/replays/{replayId}",
        "http",
        "G1.U2.P1.Z3.A1",
        "context:replay",
        DOC_READ,
        "replay:run",
        binding=REPLAY,
    ),
    # files uploaded to a running server (app/http/documents.py): upsertDocument's permission, members only
    Operation(
        "POST /v1/documents",
        "http",
        "G1.U2.P3.Z2.A1",
        "document:write",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    Operation("GET /healthz", "http", "G1.U2.P8.Z1.A1", "system:health", auth="none"),
    Operation("GET /readyz", "http", "G1.U2.P8.Z1.A2", "system:ready", auth="none"),
    # Prometheus metrics: 404 unless CAIRN_METRICS; its own bearer token (CAIRN_METRICS_TOKEN), not a credential
    Operation("GET /metrics", "http", "G1.U2.P8.Z1.A3", "system:metrics", auth="none"),
    Operation("GET /graphql", "http", "G1.U2.P8.Z2.A1", "ide:graphiql", auth="none"),
    Operation("GET /static/graphiql/{path}", "http", "G1.U2.P8.Z2.A2", "ide:assets", auth="none"),
    Operation("GET /console", "http", "G1.U2.P8.Z5.A1", "console:page", auth="none"),
    Operation("GET /console/{path}", "http", "G1.U2.P8.Z5.A2", "console:assets", auth="none"),
    Operation("POST /graphql", "http", "G1.U2.P8.Z3.A1", "graphql:execute", auth="none"),
    Operation("WS /graphql", "http", "G1.U2.P8.Z3.A2", "graphql:subscribe", auth="none"),
    Operation(
        "POST /api/v1/decisions",
        "http",
        "G1.U2.P2.Z1.A1",
        "decision:create",
        DECIDE,
        "decisions:run",
        effect="write",
        binding=OWN_RECORDS,
    ),
    Operation(
        "GET /api/v1/decisions/{decision_id}",
        "http",
        "G1.U2.P2.Z1.A2",
        "decision:read",
        DECIDE,
        "decisions:run",
        binding=OWN_RECORDS,
    ),
    # the MCP endpoint itself takes no credential: each tool call is governed as its own operation
    Operation("POST /mcp", "http", "G1.U2.P8.Z4.A1", "mcp:execute", auth="none"),
]
"""The HTTP and WebSocket routes of the app, in registry order."""

MCP_TOOLS = [
    # U3 — MCP tools (app/mcp): the capability, permissions and scope of the GraphQL operation
    # each one maps to, so scopes and responsibility boundaries are identical on both channels
    Operation("mcp.context_pack", "mcp", "G1.U3.P1.Z1.A1", "context:pack", READ, "context:read", binding=MCP_PACK),
    Operation("mcp.get_passage", "mcp", "G1.U3.P1.Z2.A1", "document:read", READ, "context:read", binding=PASSAGE),
    Operation("mcp.get_section", "mcp", "G1.U3.P1.Z2.A2", "document:read", READ, "context:read", binding=PASSAGE),
    Operation("mcp.get_citation", "mcp", "G1.U3.P1.Z2.A3", "document:read", READ, "context:read", binding=CITATION),
    # discovery: the ids the other tools take (collections, networks and types, templates)
    Operation(
        "mcp.list_collections", "mcp", "G1.U3.P1.Z2.A4", "collection:read", READ, "context:read", binding=COLLECTIONS
    ),
    Operation(
        "mcp.list_knowledge_networks",
        "mcp",
        "G1.U3.P4.Z1.A1",
        "ontology:read",
        READ,
        "context:read",
        binding=ONTOLOGY_REFUSED,
    ),
    Operation(
        "mcp.list_object_types",
        "mcp",
        "G1.U3.P4.Z1.A2",
        "ontology:read",
        READ,
        "context:read",
        binding=ONTOLOGY_REFUSED,
    ),
    Operation(
        "mcp.list_query_templates",
        "mcp",
        "G1.U3.P1.Z7.A1",
        "query_template:list",
        QUERIES,
        "queries:run",
        binding=SET_READ,
    ),
    Operation(
        "mcp.remember",
        "mcp",
        "G1.U3.P9.Z1.A1",
        "memory:write",
        frozenset({"document:read", "agent:run"}),
        "memory:write",
        effect="write",
        binding=MCP_MEMORY_WRITE,
    ),
    Operation(
        "mcp.forget",
        "mcp",
        "G1.U3.P9.Z1.A2",
        "memory:forget",
        DOC_READ,
        "memory:write",
        effect="write",
        binding=OWN_RECORDS,
    ),
    Operation("mcp.recall", "mcp", "G1.U3.P9.Z2.A1", "memory:recall", READ, "memory:read", binding=MCP_MEMORY_READ),
    Operation(
        "mcp.create_decision",
        "mcp",
        "G1.U3.P2.Z1.A1",
        "decision:create",
        DECIDE,
        "decisions:run",
        effect="write",
        binding=OWN_RECORDS,
    ),
    Operation(
        "mcp.search_context_sets", "mcp", "G1.U3.P1.Z3.A1", "context_set:list", READ, "context:read", binding=SETS_LIST
    ),
    Operation(
        "mcp.lookup_definitions",
        "mcp",
        "G1.U3.P1.Z3.A3",
        "context_set:definitions",
        READ,
        "context:read",
        binding=SET_READ,
    ),
    Operation(
        "mcp.match_verified_answers",
        "mcp",
        "G1.U3.P1.Z3.A4",
        "context_set:answers",
        READ,
        "context:read",
        binding=SET_READ,
    ),
    Operation("mcp.timeline", "mcp", "G1.U3.P1.Z4.A1", "context:temporal", READ, "context:read", binding=FACTS),
    Operation("mcp.current_facts", "mcp", "G1.U3.P1.Z4.A2", "context:temporal", READ, "context:read", binding=FACTS),
    Operation("mcp.list_fields", "mcp", "G1.U3.P1.Z5.A1", "fields:read", READ, "context:read", binding=FIELDS),
    Operation("mcp.query_fields", "mcp", "G1.U3.P1.Z5.A2", "fields:query", READ, "context:read", binding=FIELDS),
    Operation(
        "mcp.run_query_template",
        "mcp",
        "G1.U3.P1.Z7.A2",
        "query_template:run",
        QUERIES,
        "queries:run",
        binding=TEMPLATE_RUN,
    ),
    Operation(
        "mcp.report_context_gap",
        "mcp",
        "G1.U3.P1.Z8.A1",
        "context_gap:report",
        frozenset({"library:read"}),
        "gaps:report",
        effect="write",
        binding=OWN_RECORDS,
    ),
    Operation(
        "mcp.object_instances",
        "mcp",
        "G1.U3.P4.Z2.A1",
        "ontology:query",
        READ,
        "context:read",
        binding=ONTOLOGY_REFUSED,
    ),
    Operation(
        "mcp.semantic_recall",
        "mcp",
        "G1.U3.P4.Z2.A2",
        "ontology:recall",
        READ,
        "context:read",
        binding=ONTOLOGY_REFUSED,
    ),
]
"""The MCP tools (``app/mcp``), in registry order."""
