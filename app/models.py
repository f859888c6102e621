"""SQLModel tables: the source of truth. Whoosh and Qdrant are derived from these.

Time columns are timezone-aware UTC. Bitemporal documents: each :class:`DocumentVersion`
has a *valid time* interval ``[valid_from, valid_to)`` (when its content is true in the
world) and a *system time* ``recorded_at`` (when Cairn recorded it). A deletion is a
system-time fact (``Document.deleted_at``); rows are not physically removed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
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

    ``lexical_indexed``/``vector_indexed`` are the outbox flags: false until the derived
    index has the passage, so a crash between the SQL commit and the index write is
    repaired at start-up.
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
    """What a pack contained, as ids and hashes only (never text); expires after 30 days."""

    id: str = Field(primary_key=True, max_length=40)
    pack_id: str = Field(index=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspace.id", index=True, max_length=40)
    principal_id: str = Field(max_length=40)
    task_sha256: str = Field(max_length=64)
    conditions: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    items: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime
    expires_at: datetime


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
