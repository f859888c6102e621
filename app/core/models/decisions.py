"""SQLModel tables: Decisions and agent sessions (SPEC §8)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

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
    read it). ``expires_at``: purge time (retention). ``lease_expires_at``: until when the
    process running a ``RUNNING`` decision vouches for it (renewed while it runs; a read after
    it marks the decision ``FAILED``, :mod:`app.decisions.lease`); None on a ``RUNNING`` row
    counts as lapsed.
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
    lease_expires_at: datetime | None = None


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
