"""The memory operations' requests: frozen dataclasses that validate themselves on construction.

GraphQL (:mod:`resolvers.memory`) and MCP (:mod:`app.mcp.memories`) only convert their
arguments to these; the rules are written here once. ``field_prefix`` (``"input."`` by
default) is the transport's path to the fields, so an error names the field as the caller
wrote it (``input.query``); it is not stored.

Raises (on construction):
    BadInput: ``BAD_USER_INPUT`` with ``field`` and, for lengths, ``limit``.
    MemoryPersonalData: personal data in a namespace or key (``AGENT_MEMORY_PERSONAL_DATA``).
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass
from datetime import UTC, datetime

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import require_storable, validate_identifier
from cairn.app.memory.admin import MAX_RETENTION, MIN_RETENTION
from cairn.app.memory.fields import validate_fields
from cairn.app.memory.service import LIST_LIMIT, MAX_LIST_LIMIT, MAX_RECALL_LIMIT, RECALL_LIMIT

MAX_QUERY_CHARS = 1_000
MAX_CURSOR_CHARS = 200


def _id(value: str | None, field: str) -> None:
    if value is not None:
        validate_identifier(value, field)


def _aware(value: datetime | None, field: str) -> None:
    """A time must carry a zone and convert to UTC (years 1–9999 after the shift)."""
    if value is None:
        return
    if value.tzinfo is None:
        raise BadInput(f"{field} needs a timezone (e.g. 2025-01-01T00:00:00Z)", field=field)
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise BadInput(f"{field} is outside the representable UTC range (years 1–9999)", field=field) from None


@dataclass(frozen=True)
class MemoryNote:
    """Remember: a note for the member behind the caller (rules: :func:`app.memory.service.remember`).

    ``namespace`` 1–64 and ``key`` 1–120 characters without personal data, ``text`` 1–1,000
    characters, ``collection_id`` and each of ≤ 20 ``citations`` an identifier.
    """

    namespace: str
    text: str
    key: str | None = None
    collection_id: str | None = None
    citations: tuple[str, ...] = ()
    field_prefix: InitVar[str] = "input."

    def __post_init__(self, field_prefix: str) -> None:
        p = field_prefix
        for value, name in ((self.namespace, "namespace"), (self.text, "text"), (self.key or "", "key")):
            require_storable(value, f"{p}{name}")
        _id(self.collection_id, f"{p}collectionId")
        for i, c in enumerate(self.citations):
            _id(c, f"{p}citations[{i}]")
        validate_fields(namespace=self.namespace, key=self.key, text=self.text, citations=self.citations, prefix=p)


@dataclass(frozen=True)
class RecallQuery:
    """Recall: rank the caller's memories for ``query`` (rules: :func:`app.memory.service.recall`).

    ``query`` 1–1,000 characters, not only spaces; ``limit`` 1–50; ``as_of`` with a zone.
    """

    query: str
    namespace: str | None = None
    collection_id: str | None = None
    as_of: datetime | None = None
    limit: int = RECALL_LIMIT
    field_prefix: InitVar[str] = "input."

    def __post_init__(self, field_prefix: str) -> None:
        p = field_prefix
        require_storable(self.query, f"{p}query")
        if not 1 <= len(self.query) <= MAX_QUERY_CHARS or not self.query.strip():
            raise BadInput(f"{p}query must be 1–1,000 characters, not only spaces", field=f"{p}query", limit="1-1000")
        if not 1 <= self.limit <= MAX_RECALL_LIMIT:
            raise BadInput(f"{p}limit must be 1–50", field=f"{p}limit", limit="1-50")
        _id(self.collection_id, f"{p}collectionId")
        _aware(self.as_of, f"{p}asOf")
        validate_fields(namespace=self.namespace, prefix=p)


@dataclass(frozen=True)
class MemoryListQuery:
    """List the caller's memories, newest first (rules: :func:`app.memory.service.list_memories`).

    ``limit`` 1–100; ``cursor`` ≤ 200 characters; ``as_of`` with a zone.
    """

    namespace: str | None = None
    key: str | None = None
    collection_id: str | None = None
    as_of: datetime | None = None
    limit: int = LIST_LIMIT
    cursor: str | None = None
    all_versions: bool = False
    field_prefix: InitVar[str] = "input."

    def __post_init__(self, field_prefix: str) -> None:
        p = field_prefix
        if not 1 <= self.limit <= MAX_LIST_LIMIT:
            raise BadInput(f"{p}limit must be 1–100", field=f"{p}limit", limit="1-100")
        if self.cursor is not None and len(self.cursor) > MAX_CURSOR_CHARS:
            raise BadInput(f"{p}cursor must be at most 200 characters", field=f"{p}cursor", limit=MAX_CURSOR_CHARS)
        if self.cursor is not None:
            require_storable(self.cursor, f"{p}cursor")
        _id(self.collection_id, f"{p}collectionId")
        _aware(self.as_of, f"{p}asOf")
        validate_fields(namespace=self.namespace, key=self.key, prefix=p)


@dataclass(frozen=True)
class ForgetRequest:
    """Forget by ``memory_id``, or by ``namespace`` and ``key`` (either, not both);
    ``only_version`` (with ``memory_id`` only): that version only."""

    memory_id: str | None = None
    namespace: str | None = None
    key: str | None = None
    only_version: bool = False
    field_prefix: InitVar[str] = "input."

    def __post_init__(self, field_prefix: str) -> None:
        p = field_prefix
        by_id = self.memory_id is not None
        by_key = self.namespace is not None or self.key is not None
        if by_id == by_key or (by_key and (self.namespace is None or self.key is None)):
            raise BadInput(f"give either {p}memoryId, or {p}namespace and {p}key", field=p.rstrip(".") or "arguments")
        if self.only_version and not by_id:
            raise BadInput(f"{p}onlyVersion needs {p}memoryId (one version)", field=f"{p}onlyVersion")
        _id(self.memory_id, f"{p}memoryId")
        validate_fields(namespace=self.namespace, key=self.key, prefix=p)


@dataclass(frozen=True)
class MemorySettingsChange:
    """Owner settings; ``None`` keeps a value. ``retention_days`` 1–365."""

    enabled: bool | None = None
    retention_days: int | None = None
    field_prefix: InitVar[str] = ""

    def __post_init__(self, field_prefix: str) -> None:
        days = self.retention_days
        if days is not None and not MIN_RETENTION <= days <= MAX_RETENTION:
            raise BadInput(
                f"{field_prefix}retentionDays must be 1–365", field=f"{field_prefix}retentionDays", limit="1-365"
            )
