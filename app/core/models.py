"""SQLModel tables: the source of truth. Whoosh and Qdrant are derived from these.

Time columns are timezone-aware UTC. Bitemporal documents: each :class:`DocumentVersion`
has a *valid time* interval ``[valid_from, valid_to)`` (when its content is true in the
world) and a *system time* ``recorded_at`` (when Cairn recorded it). A deletion is a
system-time fact (``Document.deleted_at``); rows are not physically removed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, ForeignKey, Index, Integer, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


class Workspace(SQLModel, table=True):
    """A tenant. ``retaining`` workspaces keep history (memories, replays, decisions)."""

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(index=True, unique=True, max_length=120)
    retaining: bool = True
    memory_enabled: bool = False
    memory_retention_days: int = 90
    created_at: datetime


class Member(SQLModel, table=True):
    """A human member of one workspace, with a role and a member token (id + SHA-256 only)."""

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    name: str = Field(max_length=120)
    role: str = Field(max_length=16)
    token_id: str = Field(index=True, unique=True, max_length=32)
    token_sha256: str = Field(max_length=64)
    created_at: datetime
    removed_at: datetime | None = None


class AgentCredential(SQLModel, table=True):
    """An agent credential ``ck_<id>_<secret>``: only ``id`` and SHA-256(secret) are stored.

    ``profile`` holds the responsibility envelope: ``grantedCapabilities``,
    ``naturalAvoidances``, ``suggestOnly``, ``reconfirmBefore``, ``hardBoundaries``.
    """

    id: str = Field(primary_key=True, max_length=16)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    creator_id: str = Field(foreign_key="member.id", index=True, max_length=40)
    name: str = Field(max_length=120)
    secret_sha256: str = Field(max_length=64)
    scopes: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    profile: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    context_set_id: str | None = Field(default=None, max_length=40)
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    """When it last authenticated a call, to the minute (:data:`app.identity.authentication.LAST_USED_RESOLUTION`)."""


class Collection(SQLModel, table=True):
    """A named group of documents in a workspace."""

    __table_args__ = (UniqueConstraint("workspace_id", "name"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    name: str = Field(max_length=120)
    created_at: datetime
    deleted_at: datetime | None = None


class Document(SQLModel, table=True):
    """A document; its content lives in versions. ``external_id`` is the caller's key."""

    __table_args__ = (UniqueConstraint("collection_id", "external_id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    collection_id: str = Field(foreign_key="collection.id", index=True, max_length=40)
    external_id: str = Field(max_length=512)
    title: str = Field(default="", sa_column=Column(Text, nullable=False))
    media_type: str = Field(default="text/plain", max_length=64)
    created_at: datetime
    deleted_at: datetime | None = None


class DocumentVersion(SQLModel, table=True):
    """One version of a document's text with its valid-time interval and system time."""

    __table_args__ = (
        UniqueConstraint("document_id", "number"),
        Index("ix_documentversion_doc_recorded", "document_id", "recorded_at"),
    )

    id: str = Field(primary_key=True, max_length=40)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    number: int
    text: str = Field(sa_column=Column(Text, nullable=False))
    content_sha256: str = Field(max_length=64)
    valid_from: datetime
    valid_to: datetime | None = None
    recorded_at: datetime


class Passage(SQLModel, table=True):
    """A span of text, identified by (document, content, occurrence): stable across versions.

    ``lexical_indexed``/``vector_indexed`` were shared outbox flags; since several workers
    each keep their own indexes they are no longer read or written: every worker follows the
    change log (:class:`IndexChange`) with its own cursor (:mod:`app.corpus.changes`).
    """

    id: str = Field(primary_key=True, max_length=40)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    collection_id: str = Field(foreign_key="collection.id", index=True, max_length=40)
    sha256: str = Field(max_length=64, index=True)
    text: str = Field(sa_column=Column(Text, nullable=False))
    token_count: int
    lexical_indexed: bool = Field(default=False, index=True)
    vector_indexed: bool = Field(default=False, index=True)


class VersionPassage(SQLModel, table=True):
    """Where a passage sits in a version: ``version.text[start:end] == passage.text``."""

    version_id: str = Field(foreign_key="documentversion.id", primary_key=True, max_length=40)
    passage_id: str = Field(foreign_key="passage.id", primary_key=True, index=True, max_length=40)
    ordinal: int
    start: int
    end: int


class ReplayRecord(SQLModel, table=True):
    """What a pack contained, as ids and hashes only (never text); expires after 30 days.

    ``payload`` holds conditions and items in the compact binary form of
    :mod:`app.packs.replay_codec` (records written before it keep the JSON ``conditions`` /
    ``items`` columns, which new records leave empty).
    """

    id: str = Field(primary_key=True, max_length=40)
    pack_id: str = Field(index=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    principal_id: str = Field(max_length=40)
    task_sha256: str = Field(max_length=64)
    conditions: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    items: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    payload: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    created_at: datetime
    expires_at: datetime = Field(index=True)


class TemporalStatement(SQLModel, table=True):
    """A time-scoped statement found in a document version (:mod:`app.temporal`).

    ``subject_key`` is the normalised subject (the document's title); ``relation`` the role
    it assigns (``""``: none, e.g. an event); ``holder`` who holds it. ``[start, end)`` is the
    statement's span in the version text (``sha256`` of that text); ``[valid_from, valid_to)``
    its interval as written (``None``: open), ``precision`` ``day | month | year``.
    """

    __tablename__ = "temporal_statement"
    __table_args__ = (
        Index("ix_temporal_statement_ws_subject", "workspace_id", "subject_key"),
        Index("ix_temporal_statement_ws_subject_base", "workspace_id", "subject_base"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", max_length=40)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=40)
    version_id: str = Field(foreign_key="documentversion.id", index=True, max_length=40)
    passage_id: str | None = Field(default=None, max_length=40)
    subject: str = Field(sa_column=Column(Text, nullable=False))
    subject_key: str = Field(max_length=200)
    subject_base: str = Field(default="", max_length=200)
    """``subject_key`` without a trailing disambiguation in brackets ("Council of State ( Greece )"
    → "council of state"): what the GRAPH leg matches in a task."""
    relation: str = Field(default="", max_length=80)
    holder: str = Field(default="", max_length=200)
    text: str = Field(sa_column=Column(Text, nullable=False))
    start: int
    end: int
    sha256: str = Field(max_length=64)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    precision: str = Field(max_length=8)
    time_source: str = Field(default="text", max_length=8)


class TemporalIndexedVersion(SQLModel, table=True):
    """A document version whose statements are in ``temporal_statement`` (possibly none)."""

    __tablename__ = "temporal_indexed_version"

    version_id: str = Field(foreign_key="documentversion.id", primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    statements: int = 0


class ConfirmationRequest(SQLModel, table=True):
    """A reconfirmation issued by a responsibility boundary (AVOID / RECONFIRM); single use."""

    token: str = Field(primary_key=True, max_length=64)
    credential_id: str = Field(index=True, max_length=16)
    operation: str = Field(max_length=80)
    input_sha256: str = Field(max_length=64)
    decision: str = Field(max_length=16)
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None


# ---------------------------------------------------------------------------------------
# Ontology (SPEC §6): knowledge networks, object types, instances, trace receipts
# ---------------------------------------------------------------------------------------


class KnowledgeNetwork(SQLModel, table=True):
    """A knowledge network of one workspace; ``kn_id`` is the caller's slug (e.g. ``northwind``).

    ``generation`` increases with every load, so in-process caches of its instances know
    when they are stale.
    """

    __tablename__ = "ontology_network"

    workspace_id: str = Field(foreign_key="workspace.id", primary_key=True, max_length=40)
    kn_id: str = Field(primary_key=True, max_length=64)
    name: str = Field(max_length=200)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    generation: int = 1
    loaded_at: datetime


class ObjectType(SQLModel, table=True):
    """An object type: typed properties (with their indexes), primary key, concept groups.

    ``properties`` is a list of ``{name, type, description, fullText, vector}``;
    ``primary_key`` the list of key property names; ``vector_model`` the embedding model
    the vectors were made with (``None``: no vector index).
    """

    __tablename__ = "ontology_object_type"

    workspace_id: str = Field(primary_key=True, max_length=40)
    kn_id: str = Field(primary_key=True, max_length=64)
    ot_id: str = Field(primary_key=True, max_length=64)
    name: str = Field(max_length=200)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    primary_key: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    properties: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    concept_groups: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    vector_model: str | None = Field(default=None, max_length=200)
    instance_count: int = 0
    generation: int = 1


class ObjectInstance(SQLModel, table=True):
    """One instance (row) of an object type; ``key`` is the canonical JSON of its key values.

    ``vectors`` maps a vector-indexed property to its embedding (float32 little-endian
    bytes, base64) so the vector index is rebuilt from SQL without re-encoding.
    """

    __tablename__ = "ontology_instance"

    workspace_id: str = Field(primary_key=True, max_length=40)
    kn_id: str = Field(primary_key=True, max_length=64)
    ot_id: str = Field(primary_key=True, max_length=64)
    key: str = Field(primary_key=True, max_length=512)
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    vectors: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class TraceInteraction(SQLModel, table=True):
    """A server-issued interaction (``startInteraction``) inside a conversation."""

    __tablename__ = "trace_interaction"

    interaction_id: str = Field(primary_key=True, max_length=40)
    conversation_id: str = Field(index=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    principal_id: str = Field(max_length=40)
    created_at: datetime


class OperationReceipt(SQLModel, table=True):
    """What the server recorded for one managed or idempotent call.

    ``invocation_id`` is the client's ``X-Client-Invocation-Id`` (unique per principal);
    ``result`` the JSON result replayed to a retry with the same operation and input.
    """

    __tablename__ = "trace_operation_receipt"
    __table_args__ = (UniqueConstraint("workspace_id", "principal_id", "invocation_id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    principal_id: str = Field(max_length=40)
    conversation_id: str | None = Field(default=None, index=True, max_length=40)
    interaction_id: str | None = Field(default=None, index=True, max_length=40)
    invocation_id: str | None = Field(default=None, max_length=128)
    operation: str = Field(max_length=80)
    input_sha256: str = Field(max_length=64)
    result: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime


# ---------------------------------------------------------------------------------------------
# Governed agent memory (SPEC §7): private notes an agent keeps for the member who created its
# credential. Text is PII-masked before it reaches these rows; citations keep only a passage
# reference and its SHA-256. Forget and purges delete rows physically (no derived index holds
# memory content: BM25 and cosine run over these rows per request; the per-memory term rows
# below are deleted with their memory).
# ---------------------------------------------------------------------------------------------


class AgentMemory(SQLModel, table=True):
    """One version of a memory. Same ``(owner, namespace, key)`` → a new version supersedes.

    ``owner_member_id`` is the member who created the writing credential (or the member
    themself): the only one who can ever read it. ``embedding`` is float32 little-endian
    (``embedding_model`` names the encoder), computed from the masked text at write time.
    ``superseded_at`` is the system time a newer version replaced this one (None: current).
    """

    __table_args__ = (
        Index("ix_agentmemory_owner_recorded", "workspace_id", "owner_member_id", "recorded_at"),
        Index("ix_agentmemory_owner_key", "workspace_id", "owner_member_id", "namespace", "key"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    owner_member_id: str = Field(foreign_key="member.id", index=True, max_length=40)
    writer_id: str = Field(max_length=40)
    namespace: str = Field(max_length=64)
    key: str | None = Field(default=None, max_length=120)
    collection_id: str | None = Field(default=None, index=True, max_length=40)
    version: int = 1
    text: str = Field(sa_column=Column(Text, nullable=False))
    entities: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    embedding: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    embedding_model: str | None = Field(default=None, max_length=120)
    recorded_at: datetime
    superseded_at: datetime | None = None


class MemoryCitation(SQLModel, table=True):
    """A memory's reference to a passage: ids and the passage SHA-256 only, never its text.

    ``document_version`` is the document's latest version number when the memory was
    written (a newer one later → ``sourceState: CHANGED``).
    """

    memory_id: str = Field(foreign_key="agentmemory.id", primary_key=True, max_length=40)
    passage_id: str = Field(primary_key=True, max_length=40)
    passage_sha256: str = Field(max_length=64)
    document_id: str = Field(index=True, max_length=40)
    collection_id: str = Field(index=True, max_length=40)
    document_version: int


class MemoryTerm(SQLModel, table=True):
    """One distinct analysed term of a memory's masked text (recall's candidate selection).

    Terms come from :func:`retrieval.analysis.analyze` (the BM25 leg's analyzer: lowercase,
    stop words out, Porter2 stems, CJK bigrams), cut to 64 characters. Written with the
    memory, deleted with it (forget, bulk delete, retention and source purges).
    ``workspace_id``/``owner_member_id`` repeat the memory's so the lookup index
    ``(workspace, owner, term)`` keeps the owner filter inside the query.
    """

    __table_args__ = (Index("ix_memoryterm_owner_term", "workspace_id", "owner_member_id", "term"),)

    memory_id: str = Field(foreign_key="agentmemory.id", primary_key=True, max_length=40)
    term: str = Field(primary_key=True, max_length=64)
    workspace_id: str = Field(max_length=40)
    owner_member_id: str = Field(max_length=40)


class MemoryWrite(SQLModel, table=True):
    """Rate-limit ledger: one row per accepted remember (no content), kept for one hour."""

    id: int | None = Field(default=None, primary_key=True)
    credential_id: str = Field(index=True, max_length=40)
    workspace_id: str = Field(max_length=40)
    at: datetime = Field(index=True)


# ------------------------------------------------------------------------------------------
# Decisions and agent sessions (SPEC §8)
# ------------------------------------------------------------------------------------------


class AgentSession(SQLModel, table=True):
    """A session of recent messages an agent keeps for decisions (``sess_…``).

    Belongs to the member behind the caller (``member_id``) in one workspace; that member and
    their agent credentials may read, append, archive and decide on it. Archived sessions
    are read-only and refused as decision context (404).
    """

    __tablename__ = "agent_session"

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    member_id: str = Field(foreign_key="member.id", index=True, max_length=40)
    created_by: str = Field(max_length=40)
    title: str | None = Field(default=None, max_length=200)
    message_count: int = 0
    created_at: datetime
    updated_at: datetime
    archived_at: datetime | None = None


class SessionMessage(SQLModel, table=True):
    """One message of an :class:`AgentSession`, numbered from 1 in append order."""

    __tablename__ = "session_message"
    __table_args__ = (UniqueConstraint("session_id", "ordinal"),)

    id: str = Field(primary_key=True, max_length=40)
    session_id: str = Field(foreign_key="agent_session.id", index=True, max_length=40)
    ordinal: int
    role: str = Field(max_length=16)
    content: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime


class Decision(SQLModel, table=True):
    """One structured decision (``dec_…``): request, answers or error, and how often the judge ran.

    ``status`` is ``RUNNING``, ``COMPLETED`` or ``FAILED``. ``judge_runs`` counts judge
    invocations for this decision (1 for every completed decision; the idempotency tests
    read it). ``expires_at``: purge time (retention).
    """

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    principal_id: str = Field(index=True, max_length=40)
    member_id: str = Field(max_length=40)
    session_id: str | None = Field(default=None, max_length=300)
    source: str = Field(max_length=16)
    status: str = Field(max_length=16)
    mode: str = Field(max_length=16)
    questions: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    answers: list[dict[str, Any]] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    error: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    context_info: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    judge: str = Field(default="", max_length=200)
    judge_runs: int = 0
    created_at: datetime
    completed_at: datetime | None = None
    expires_at: datetime = Field(index=True)


class DecisionIdempotency(SQLModel, table=True):
    """An ``Idempotency-Key`` record; the unique (principal, key) pair is the cross-process lock.

    ``state`` is ``RUNNING`` until the response is stored (``DONE``): then ``response_status``
    and ``response_body`` are replayed for the same key and the same body bytes
    (``request_sha256``). Kept until ``expires_at`` (24 h), then purged.
    """

    __tablename__ = "decision_idempotency"
    __table_args__ = (UniqueConstraint("principal_id", "key", name="uq_decision_idempotency_key"),)

    id: str = Field(primary_key=True, max_length=40)
    principal_id: str = Field(max_length=40)
    key: str = Field(max_length=256)
    request_sha256: str = Field(max_length=64)
    decision_id: str | None = Field(default=None, max_length=40)
    state: str = Field(max_length=16)
    response_status: int | None = None
    response_body: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime
    expires_at: datetime = Field(index=True)


class RateLimitCounter(SQLModel, table=True):
    """One fixed-window call counter of :mod:`app.governance.rate_limits`.

    ``subject`` is ``agent:<credential id>`` or ``member:<member id>``; ``rate_class`` one of
    :data:`app.governance.registry.RATE_CLASSES`; ``window_start`` the window's start in Unix seconds
    (a multiple of the window length); ``hits`` the calls counted in it, incremented by one
    atomic upsert per call. Rows older than two windows are deleted opportunistically.
    """

    __tablename__ = "rate_limit_counter"

    subject: str = Field(primary_key=True, max_length=60)
    rate_class: str = Field(primary_key=True, max_length=16)
    window_start: int = Field(sa_column=Column(BigInteger, primary_key=True, index=True))
    hits: int


class FieldDefinition(SQLModel, table=True):
    """A learned field of a collection (SPEC §5): name, type (NUMBER MONEY DATE BOOLEAN TEXT
    DURATION), description, multiplicity (ONE/MANY) and example values."""

    __tablename__ = "field_definition"
    __table_args__ = (UniqueConstraint("collection_id", "name"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    collection_id: str = Field(foreign_key="collection.id", index=True, max_length=40)
    name: str = Field(max_length=64)
    type: str = Field(max_length=16)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    multiplicity: str = Field(default="ONE", max_length=8)
    examples: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime
    updated_at: datetime


class FieldState(SQLModel, table=True):
    """Per collection: the extraction revision (bumped when definitions or the ranker change)
    and the trained ranker (plain JSON weights, :meth:`app.fields.Ranker.to_json`)."""

    __tablename__ = "field_state"

    collection_id: str = Field(foreign_key="collection.id", primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    revision: int = 1
    model: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    trained_at: datetime | None = None


class FieldExtraction(SQLModel, table=True):
    """A version's fields were extracted at ``revision`` (so unchanged versions are not redone)."""

    __tablename__ = "field_extraction"

    version_id: str = Field(foreign_key="documentversion.id", primary_key=True, max_length=40)
    collection_id: str = Field(foreign_key="collection.id", index=True, max_length=40)
    revision: int
    extracted_at: datetime


class FieldValue(SQLModel, table=True):
    """One value of a field in one document version (a null value has ``value`` None and an
    ``uncited_reason``). ``start``/``end`` are offsets into the version's text; the citation is
    the passage holding them and the passage's SHA-256 at extraction time."""

    __tablename__ = "field_value"
    __table_args__ = (Index("ix_field_value_version_field", "version_id", "field_name"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    collection_id: str = Field(foreign_key="collection.id", index=True, max_length=40)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=40)
    version_id: str = Field(foreign_key="documentversion.id", index=True, max_length=40)
    field_name: str = Field(max_length=64)
    ordinal: int = 0
    value: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    key: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    score: float = 0.0
    passage_id: str | None = Field(default=None, max_length=40)
    start: int | None = None
    end: int | None = None
    sha256: str | None = Field(default=None, max_length=64)
    uncited_reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    source: str = Field(default="MODEL", max_length=8)
    recorded_at: datetime


class FieldLabel(SQLModel, table=True):
    """An editor's confirmation or correction of a field in a document version: the true value
    keys (empty = the document has no value). The ranker trains on these."""

    __tablename__ = "field_label"
    __table_args__ = (UniqueConstraint("version_id", "field_name"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    collection_id: str = Field(foreign_key="collection.id", index=True, max_length=40)
    document_id: str = Field(foreign_key="document.id", index=True, max_length=40)
    version_id: str = Field(foreign_key="documentversion.id", max_length=40)
    field_name: str = Field(max_length=64)
    keys: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    member_id: str | None = Field(default=None, max_length=40)
    created_at: datetime


class ContextSet(SQLModel, table=True):
    """A curated context set (SPEC §4): scope, state and a version counter.

    ``collection_ids``/``document_ids`` are the scope (retrieval and bound credentials are
    limited to their union; both empty = nothing in scope). ``version`` counts changes; each
    change writes a :class:`ContextSetVersion` (who, when, what, a snapshot). The entries
    live in :class:`ContextSetEntry`; query templates (another table) refer to ``id``.
    """

    __tablename__ = "context_set"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    name: str = Field(max_length=120)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    active: bool = True
    collection_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    document_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    version: int = 1
    created_at: datetime
    created_by: str = Field(max_length=40)
    updated_at: datetime
    updated_by: str = Field(max_length=40)


class ContextSetEntry(SQLModel, table=True):
    """One approved entry of a context set; ``kind`` says which and what the columns mean.

    - ``VERIFIED_ANSWER``: ``key`` = question, ``value`` = approved answer, optional citation
      ``document_id``/``passage_id``.
    - ``DEFINITION``: ``key`` = term, ``value`` = definition, ``aliases`` = other terms.
    - ``INSTRUCTION``: ``value`` = the instruction text (``key`` empty); ``position`` orders them.
    - ``REQUIRED_EVIDENCE``: ``document_id`` and optional ``passage_id`` (``key``/``value`` empty).

    ``position`` is the entry's order within its kind (0-based). ``trust`` is ``APPROVED``.
    """

    __tablename__ = "context_set_entry"
    __table_args__ = (Index("ix_context_set_entry_set_kind_pos", "context_set_id", "kind", "position"),)

    id: str = Field(primary_key=True, max_length=40)
    context_set_id: str = Field(foreign_key="context_set.id", index=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    kind: str = Field(max_length=24)
    position: int = 0
    key: str = Field(default="", sa_column=Column(Text, nullable=False))
    value: str = Field(default="", sa_column=Column(Text, nullable=False))
    aliases: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    document_id: str | None = Field(default=None, max_length=40)
    passage_id: str | None = Field(default=None, max_length=40)
    trust: str = Field(default="APPROVED", max_length=16)
    created_at: datetime
    created_by: str = Field(max_length=40)


class ContextSetVersion(SQLModel, table=True):
    """One change to a context set: who made it, when, what (``change``) and the resulting state.

    ``snapshot`` is the whole set after the change (scope, state and entries, as the GraphQL
    shape), so any earlier version can be shown or compared.
    """

    __tablename__ = "context_set_version"

    context_set_id: str = Field(foreign_key="context_set.id", primary_key=True, max_length=40)
    number: int = Field(primary_key=True)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    actor_id: str = Field(max_length=40)
    change: str = Field(max_length=200)
    snapshot: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    changed_at: datetime


class QueryTemplate(SQLModel, table=True):
    """An approved-or-not parameterised SELECT of a context set (:mod:`app.templates`).

    ``digest`` is the SHA-256 of the current SQL and parameter declarations
    (:func:`app.templates.approval.template_digest`); the template is approved only while
    ``approved_digest`` equals it, so any change needs a new approval. ``sql_text`` is never
    shown to agents. ``version`` counts changes (1 at creation).
    """

    __tablename__ = "query_template"
    __table_args__ = (UniqueConstraint("context_set_id", "name"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    context_set_id: str = Field(foreign_key="context_set.id", index=True, max_length=40)
    name: str = Field(max_length=64)
    description: str = Field(default="", sa_column=Column(Text, nullable=False))
    sql_text: str = Field(sa_column=Column(Text, nullable=False))
    parameters: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    max_rows: int | None = None
    version: int = 1
    digest: str = Field(max_length=64)
    approved_digest: str | None = Field(default=None, max_length=64)
    approved_dialect: str | None = Field(default=None, max_length=16)
    approved_by: str | None = Field(default=None, max_length=40)
    approved_at: datetime | None = None
    created_at: datetime
    created_by: str = Field(max_length=40)
    updated_at: datetime
    updated_by: str = Field(max_length=40)


class ContextGap(SQLModel, table=True):
    """A reported context gap (:mod:`app.gaps`): the task, what was missing, who reported it
    (an agent credential and its creator, or a member) and, optionally, the pack and trace it
    concerns. Listed newest first (``created_at``, then ``id``) to editors and above."""

    __tablename__ = "context_gap"
    __table_args__ = (Index("ix_context_gap_workspace_created", "workspace_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", max_length=40)
    task: str = Field(sa_column=Column(Text, nullable=False))
    missing: str = Field(sa_column=Column(Text, nullable=False))
    reporter_kind: str = Field(max_length=16)
    credential_id: str | None = Field(default=None, max_length=16)
    member_id: str = Field(max_length=40)
    pack_id: str | None = Field(default=None, max_length=64)
    trace_id: str | None = Field(default=None, max_length=64)
    created_at: datetime


# ---------------------------------------------------------------------------------------------
# Several workers (issue 19): the change log the search indexes follow, and values every worker
# of one database shares.
# ---------------------------------------------------------------------------------------------


class IndexChange(SQLModel, table=True):
    """One entry of the search-index change log (:mod:`app.corpus.changes`).

    Written in the same transaction as the passage it names (a new passage is the only SQL
    write that changes what the derived indexes hold: versions, deletions and valid times are
    resolved against SQL at query time). ``seq`` is monotonic (SQLite ``AUTOINCREMENT``,
    a PostgreSQL identity); ``txid`` is the writing transaction's ``txid_current()`` on
    PostgreSQL (0 on SQLite and for rows back-filled by the migration): followers read in
    ``(txid, seq)`` order and only rows of transactions older than every running one, so a
    later sequence number committed before an earlier one is never skipped. ``title`` is the
    document title at the write, so every worker embeds the passage with the same text.
    """

    __tablename__ = "index_change"
    __table_args__ = (Index("ix_index_change_txid_seq", "txid", "seq"), {"sqlite_autoincrement": True})

    seq: int | None = Field(
        default=None,
        sa_column=Column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True),
    )
    txid: int = Field(sa_column=Column(BigInteger, nullable=False))
    passage_id: str = Field(sa_column=Column(Text, ForeignKey("passage.id"), nullable=False))
    title: str = Field(default="", sa_column=Column(Text, nullable=False))


class SharedValue(SQLModel, table=True):
    """A value every worker of one database shares, made once by whichever worker needs it first.

    ``name``: ``database-id`` (tells a data dir which database its indexes follow) or
    ``cursor-secret`` (the HMAC key of ontology cursors when ``CAIRN_CURSOR_SECRET`` is unset,
    so a cursor made by one worker is honoured by every other one).
    """

    __tablename__ = "shared_value"

    name: str = Field(primary_key=True, max_length=40)
    value: str = Field(max_length=200)
    created_at: datetime
