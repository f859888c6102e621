"""The registry: the single source of truth for every operation Cairn serves.

Each GraphQL root field and HTTP route has one :class:`Operation` with a unique coordinate
``G<galaxy>.U<universe>.P<planet>.Z<zone>.A<agent>`` and a capability. Planets are product
areas, zones capability groups, agents the individual handlers:

====  ===========  ===========================================================
G1    Cairn
U1    GraphQL API v1          U2  HTTP routes         U3  MCP tools (``mcp.<tool>``)
P1    knowledge (packs, reads) P3 ingest (writes)  P5 agents (identity, governance)
      P4 ontology (networks, instances, recall, trace interactions)
P8    system (health, IDE)     P9 memory               P2 ai (decisions, sessions)
====  ===========  ===========================================================

``scope`` is the agent scope an operation needs (``"*"`` = any authenticated agent,
``None`` = members only); ``permissions`` are the member permissions it needs (for an agent,
its creator must hold those of the scope). ``effect`` tells boundaries whether the call has
side effects (``write``) or not (``read``). ``rate_class`` is the per-credential rate-limit
class the call counts against (:mod:`app.governance.rate_limits`), derived unless given: subscriptions
and pack operations → ``packs``, decision creation → ``decisions``, other side effects →
``writes``, everything else → ``reads``; ``None`` for ``auth="none"`` routes (no credential
to count against).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

PROFILE_LISTS = (
    "grantedCapabilities",
    "naturalAvoidances",
    "suggestOnly",
    "reconfirmBefore",
    "hardBoundaries",
)

RATE_CLASSES = ("packs", "decisions", "writes", "reads")
"""The per-credential rate-limit classes (Settings ``rate_limit_<class>_per_minute``)."""

COORDINATE_RE = re.compile(r"^G(\d+)\.U(\d+)\.P(\d+)\.Z(\d+)\.A(\d+)$")


@dataclass(frozen=True)
class Operation:
    """One registered operation (GraphQL root field or HTTP route)."""

    name: str
    kind: Literal["query", "mutation", "subscription", "http", "mcp"]
    coordinate: str
    capability: str
    permissions: frozenset[str] = frozenset()
    scope: str | None = None
    auth: Literal["required", "none"] = "required"
    effect: Literal["read", "write"] = "read"
    rate_class: Literal["packs", "decisions", "writes", "reads"] | None = None

    def __post_init__(self) -> None:
        if self.rate_class is None and self.auth == "required":
            object.__setattr__(self, "rate_class", derive_rate_class(self))

    @property
    def planet(self) -> int:
        """The product-area number of the coordinate."""
        return int(parse_coordinate(self.coordinate)[2])


def derive_rate_class(op: Operation) -> str:
    """The rate-limit class an operation counts against when none is given (module doc)."""
    if op.kind == "subscription" or op.capability == "context:pack":
        return "packs"
    if op.capability == "decision:create":
        return "decisions"
    return "writes" if op.effect == "write" else "reads"


def parse_coordinate(coordinate: str) -> tuple[int, int, int, int, int]:
    """Split ``G1.U1.P1.Z1.A1`` into its five numbers.

    Raises:
        ValueError: the string is not a coordinate.
    """
    m = COORDINATE_RE.match(coordinate)
    if not m:
        raise ValueError(f"unparseable coordinate {coordinate!r}")
    return tuple(int(x) for x in m.groups())  # type: ignore[return-value]


_READ = frozenset({"collection:read", "document:read"})
_DOC_READ = frozenset({"document:read"})
_DECIDE = frozenset({"agent:run"})
_QUERIES = frozenset({"document:read", "agent:run"})  # the queries:run scope's permissions (SPEC §1)

_OPS = [
    # P1 knowledge — reads and packs
    Operation("contextPack", "query", "G1.U1.P1.Z1.A1", "context:pack", _READ, "context:read"),
    Operation("contextPackStream", "subscription", "G1.U1.P1.Z1.A2", "context:pack", _READ, "context:read"),
    Operation("document", "query", "G1.U1.P1.Z2.A1", "document:read", _READ, "context:read"),
    Operation("collections", "query", "G1.U1.P1.Z2.A2", "collection:read", _READ, "context:read"),
    Operation("documents", "query", "G1.U1.P1.Z2.A3", "document:read", _READ, "context:read"),
    Operation("replay", "query", "G1.U1.P1.Z6.A1", "context:replay", _DOC_READ, "replay:run"),
    Operation("timeline", "query", "G1.U1.P1.Z4.A1", "context:temporal", _READ, "context:read"),
    Operation("currentFacts", "query", "G1.U1.P1.Z4.A2", "context:temporal", _READ, "context:read"),
    # P1 knowledge — learned fields (SPEC §5): reads for agents, suggestions for members
    Operation("fields", "query", "G1.U1.P1.Z5.A1", "fields:read", _READ, "context:read"),
    Operation("queryFields", "query", "G1.U1.P1.Z5.A2", "fields:query", _READ, "context:read"),
    Operation("suggestFields", "query", "G1.U1.P1.Z5.A3", "fields:suggest", _READ, None),
    # P1 knowledge — context sets and library (SPEC §4): reads by word match (Z3), curation (P3.Z3)
    Operation("contextSets", "query", "G1.U1.P1.Z3.A1", "context_set:list", _READ, "context:read"),
    Operation("contextSet", "query", "G1.U1.P1.Z3.A2", "context_set:read", _READ, "context:read"),
    Operation("lookupDefinitions", "query", "G1.U1.P1.Z3.A3", "context_set:definitions", _READ, "context:read"),
    Operation("matchVerifiedAnswers", "query", "G1.U1.P1.Z3.A4", "context_set:answers", _READ, "context:read"),
    Operation("contextSetVersions", "query", "G1.U1.P1.Z3.A5", "context_set:history", _READ, "context:read"),
    # P1 knowledge — context gaps (issue 16): agents with gaps:report (and members) report, editors+ list
    Operation(
        "reportContextGap",
        "mutation",
        "G1.U1.P1.Z8.A1",
        "context_gap:report",
        frozenset({"library:read"}),
        "gaps:report",
        effect="write",
    ),
    Operation("contextGaps", "query", "G1.U1.P1.Z8.A2", "context_gap:list", frozenset({"document:write"}), None),
    # P3 ingest — writes (members only)
    Operation(
        "createCollection",
        "mutation",
        "G1.U1.P3.Z1.A1",
        "collection:write",
        frozenset({"collection:write"}),
        None,
        effect="write",
    ),
    Operation(
        "upsertDocument",
        "mutation",
        "G1.U1.P3.Z2.A1",
        "document:write",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    Operation(
        "deleteDocument",
        "mutation",
        "G1.U1.P3.Z2.A2",
        "document:delete",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    Operation(
        "createContextSet",
        "mutation",
        "G1.U1.P3.Z3.A1",
        "context_set:create",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    Operation(
        "updateContextSet",
        "mutation",
        "G1.U1.P3.Z3.A2",
        "context_set:update",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    # P5 agents — identity and governance
    Operation("viewer", "query", "G1.U1.P5.Z1.A1", "identity:read", frozenset(), "*"),
    Operation("operations", "query", "G1.U1.P5.Z1.A2", "registry:read", frozenset(), "*"),
    Operation("members", "query", "G1.U1.P5.Z2.A1", "member:list", frozenset({"agent_credential:manage"}), None),
    Operation(
        "addMember",
        "mutation",
        "G1.U1.P5.Z2.A2",
        "member:create",
        frozenset({"workspace:manage"}),
        None,
        effect="write",
    ),
    Operation(
        "setMemberRole",
        "mutation",
        "G1.U1.P5.Z2.A3",
        "member:update",
        frozenset({"workspace:manage"}),
        None,
        effect="write",
    ),
    Operation(
        "removeMember",
        "mutation",
        "G1.U1.P5.Z2.A4",
        "member:remove",
        frozenset({"workspace:manage"}),
        None,
        effect="write",
    ),
    Operation(
        "agentCredentials",
        "query",
        "G1.U1.P5.Z3.A1",
        "agent_credential:list",
        frozenset({"agent_credential:manage"}),
        None,
    ),
    Operation(
        "createAgentCredential",
        "mutation",
        "G1.U1.P5.Z3.A2",
        "agent_credential:create",
        frozenset({"agent_credential:manage"}),
        None,
        effect="write",
    ),
    Operation(
        "revokeAgentCredential",
        "mutation",
        "G1.U1.P5.Z3.A3",
        "agent_credential:revoke",
        frozenset({"agent_credential:manage"}),
        None,
        effect="write",
    ),
    Operation("agentScopes", "query", "G1.U1.P5.Z3.A5", "agent_credential:scopes", frozenset(), None),
    Operation(
        "setAgentProfile",
        "mutation",
        "G1.U1.P5.Z3.A4",
        "agent_credential:configure",
        frozenset({"agent_credential:manage"}),
        None,
        effect="write",
    ),
    # P4 ontology — knowledge networks, instances, semantic recall, trace interactions
    Operation("knowledgeNetworks", "query", "G1.U1.P4.Z1.A1", "ontology:read", _READ, "context:read"),
    Operation("objectTypes", "query", "G1.U1.P4.Z1.A2", "ontology:read", _READ, "context:read"),
    Operation("objectInstances", "query", "G1.U1.P4.Z2.A1", "ontology:query", _READ, "context:read"),
    Operation("semanticRecall", "query", "G1.U1.P4.Z2.A2", "ontology:recall", _READ, "context:read"),
    Operation(
        "loadKnowledgeNetwork",
        "mutation",
        "G1.U1.P4.Z3.A1",
        "ontology:load",
        frozenset({"collection:write"}),
        None,
        effect="write",
    ),
    Operation("startInteraction", "mutation", "G1.U1.P4.Z4.A1", "trace:interaction", frozenset(), "*", effect="write"),
    # P9 memory — governed agent memory (SPEC §7); members may list/forget their own
    Operation(
        "rememberMemory",
        "mutation",
        "G1.U1.P9.Z1.A1",
        "memory:write",
        frozenset({"document:read", "agent:run"}),
        "memory:write",
        effect="write",
    ),
    Operation("forgetMemory", "mutation", "G1.U1.P9.Z1.A2", "memory:forget", _DOC_READ, "memory:write", effect="write"),
    Operation("recallMemories", "query", "G1.U1.P9.Z2.A1", "memory:recall", _READ, "memory:read"),
    Operation("listMemories", "query", "G1.U1.P9.Z2.A2", "memory:list", _READ, "memory:read"),
    Operation(
        "memorySettings", "query", "G1.U1.P9.Z3.A1", "memory_settings:read", frozenset({"ask_history:manage"}), None
    ),
    Operation(
        "setMemorySettings",
        "mutation",
        "G1.U1.P9.Z3.A2",
        "memory_settings:update",
        frozenset({"ask_history:manage"}),
        None,
        effect="write",
    ),
    Operation(
        "deleteAllMemories",
        "mutation",
        "G1.U1.P9.Z3.A3",
        "memory:delete_all",
        frozenset({"ask_history:manage"}),
        None,
        effect="write",
    ),
    # P2 ai — decisions and the agent sessions they can run on (SPEC §8)
    Operation(
        "createDecision", "mutation", "G1.U1.P2.Z1.A1", "decision:create", _DECIDE, "decisions:run", effect="write"
    ),
    Operation("decision", "query", "G1.U1.P2.Z1.A2", "decision:read", _DECIDE, "decisions:run"),
    Operation(
        "createSession", "mutation", "G1.U1.P2.Z2.A1", "session:create", _DECIDE, "decisions:run", effect="write"
    ),
    Operation(
        "appendSessionMessages",
        "mutation",
        "G1.U1.P2.Z2.A2",
        "session:append",
        _DECIDE,
        "decisions:run",
        effect="write",
    ),
    Operation(
        "archiveSession", "mutation", "G1.U1.P2.Z2.A3", "session:archive", _DECIDE, "decisions:run", effect="write"
    ),
    Operation("session", "query", "G1.U1.P2.Z2.A4", "session:read", _DECIDE, "decisions:run"),
    Operation("sessions", "query", "G1.U1.P2.Z2.A5", "session:list", _DECIDE, "decisions:run"),
    # P1 knowledge — query templates of context sets (SPEC §4): list and run (Z7); P3 — admin writes (Z4)
    Operation("queryTemplates", "query", "G1.U1.P1.Z7.A1", "query_template:list", _QUERIES, "queries:run"),
    Operation("runQueryTemplate", "query", "G1.U1.P1.Z7.A2", "query_template:run", _QUERIES, "queries:run"),
    Operation(
        "createQueryTemplate",
        "mutation",
        "G1.U1.P3.Z4.A1",
        "query_template:create",
        frozenset({"collection:write"}),
        None,
        effect="write",
    ),
    Operation(
        "updateQueryTemplate",
        "mutation",
        "G1.U1.P3.Z4.A2",
        "query_template:update",
        frozenset({"collection:write"}),
        None,
        effect="write",
    ),
    Operation(
        "approveQueryTemplate",
        "mutation",
        "G1.U1.P3.Z4.A3",
        "query_template:approve",
        frozenset({"collection:write"}),
        None,
        effect="write",
    ),
    Operation(
        "defineFields",
        "mutation",
        "G1.U1.P3.Z5.A1",
        "fields:define",
        frozenset({"collection:write"}),
        None,
        effect="write",
    ),
    Operation(
        "extractFields",
        "mutation",
        "G1.U1.P3.Z5.A2",
        "fields:extract",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    Operation(
        "labelFieldValue",
        "mutation",
        "G1.U1.P3.Z5.A3",
        "fields:label",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    Operation(
        "trainFields",
        "mutation",
        "G1.U1.P3.Z5.A4",
        "fields:train",
        frozenset({"document:write"}),
        None,
        effect="write",
    ),
    # U2 — HTTP routes
    Operation("POST /v1/context-packs/stream", "http", "G1.U2.P1.Z1.A1", "context:pack", _READ, "context:read"),
    Operation("POST /v1/replays/{replayId}", "http", "G1.U2.P1.Z3.A1", "context:replay", _DOC_READ, "replay:run"),
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
        "POST /api/v1/decisions", "http", "G1.U2.P2.Z1.A1", "decision:create", _DECIDE, "decisions:run", effect="write"
    ),
    Operation(
        "GET /api/v1/decisions/{decision_id}", "http", "G1.U2.P2.Z1.A2", "decision:read", _DECIDE, "decisions:run"
    ),
    # the MCP endpoint itself takes no credential: each tool call is governed as its own operation
    Operation("POST /mcp", "http", "G1.U2.P8.Z4.A1", "mcp:execute", auth="none"),
    # U3 — MCP tools (app/mcp): the capability, permissions and scope of the GraphQL operation
    # each one maps to, so scopes and responsibility boundaries are identical on both channels
    Operation("mcp.context_pack", "mcp", "G1.U3.P1.Z1.A1", "context:pack", _READ, "context:read"),
    Operation("mcp.get_passage", "mcp", "G1.U3.P1.Z2.A1", "document:read", _READ, "context:read"),
    Operation("mcp.get_section", "mcp", "G1.U3.P1.Z2.A2", "document:read", _READ, "context:read"),
    Operation("mcp.get_citation", "mcp", "G1.U3.P1.Z2.A3", "document:read", _READ, "context:read"),
    Operation(
        "mcp.remember",
        "mcp",
        "G1.U3.P9.Z1.A1",
        "memory:write",
        frozenset({"document:read", "agent:run"}),
        "memory:write",
        effect="write",
    ),
    Operation("mcp.forget", "mcp", "G1.U3.P9.Z1.A2", "memory:forget", _DOC_READ, "memory:write", effect="write"),
    Operation("mcp.recall", "mcp", "G1.U3.P9.Z2.A1", "memory:recall", _READ, "memory:read"),
    Operation(
        "mcp.create_decision", "mcp", "G1.U3.P2.Z1.A1", "decision:create", _DECIDE, "decisions:run", effect="write"
    ),
    Operation("mcp.search_context_sets", "mcp", "G1.U3.P1.Z3.A1", "context_set:list", _READ, "context:read"),
    Operation("mcp.lookup_definitions", "mcp", "G1.U3.P1.Z3.A3", "context_set:definitions", _READ, "context:read"),
    Operation("mcp.match_verified_answers", "mcp", "G1.U3.P1.Z3.A4", "context_set:answers", _READ, "context:read"),
    Operation("mcp.timeline", "mcp", "G1.U3.P1.Z4.A1", "context:temporal", _READ, "context:read"),
    Operation("mcp.current_facts", "mcp", "G1.U3.P1.Z4.A2", "context:temporal", _READ, "context:read"),
    Operation("mcp.list_fields", "mcp", "G1.U3.P1.Z5.A1", "fields:read", _READ, "context:read"),
    Operation("mcp.query_fields", "mcp", "G1.U3.P1.Z5.A2", "fields:query", _READ, "context:read"),
    Operation("mcp.run_query_template", "mcp", "G1.U3.P1.Z7.A2", "query_template:run", _QUERIES, "queries:run"),
    Operation(
        "mcp.report_context_gap",
        "mcp",
        "G1.U3.P1.Z8.A1",
        "context_gap:report",
        frozenset({"library:read"}),
        "gaps:report",
        effect="write",
    ),
    Operation("mcp.object_instances", "mcp", "G1.U3.P4.Z2.A1", "ontology:query", _READ, "context:read"),
    Operation("mcp.semantic_recall", "mcp", "G1.U3.P4.Z2.A2", "ontology:recall", _READ, "context:read"),
]

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
