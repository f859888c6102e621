"""A registered operation: its coordinate, capability, permissions, scope and rate-limit class.

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
to count against). ``binding`` is how a credential bound to a context set is limited
(:mod:`app.governance.binding`): every operation an agent may call declares one (contract
check); members-only and credential-less operations get ``NOT_APPLICABLE``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from cairn.app.governance.binding import Binding, not_applicable

MEMBERS_ONLY = not_applicable("members only: agent credentials are refused it (AGENT_OPERATION_NOT_ALLOWED)")
"""The binding every members-only operation (``scope=None``) gets: a bound credential never reaches it."""

NO_CREDENTIAL = not_applicable("takes no credential; the operations it carries are governed one by one")
"""The binding of ``auth="none"`` routes (``POST /graphql``, ``POST /mcp``, health, IDE)."""

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
    binding: Binding | None = None

    def __post_init__(self) -> None:
        if self.rate_class is None and self.auth == "required":
            object.__setattr__(self, "rate_class", derive_rate_class(self))
        if self.binding is None and (self.auth == "none" or self.scope is None):
            object.__setattr__(self, "binding", MEMBERS_ONLY if self.auth == "required" else NO_CREDENTIAL)

    @property
    def agent_callable(self) -> bool:
        """True when an agent credential may call it (so it must declare its context-set binding)."""
        return self.auth == "required" and self.scope is not None

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


READ = frozenset({"collection:read", "document:read"})
"""Member permissions of the reads of collections and documents (packs, library, ontology, memory recall)."""

DOC_READ = frozenset({"document:read"})
"""Member permissions of document-only reads (replays, forgetting a memory)."""

DECIDE = frozenset({"agent:run"})
"""Member permissions of decisions and agent sessions."""

QUERIES = frozenset({"document:read", "agent:run"})
"""The ``queries:run`` scope's permissions (SPEC §1): listing and running query templates."""
