"""SQLModel tables: Workspaces, members, agent credentials, confirmations of destructive calls, and rate-limit counters."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column
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


class RateLimitCounter(SQLModel, table=True):
    """One fixed-window call counter of :mod:`app.governance.rate_limits`.

    ``subject`` is ``agent:<credential id>`` or ``member:<member id>``; ``rate_class`` one of
    :data:`app.governance.operation.RATE_CLASSES`; ``window_start`` the window's start in Unix seconds
    (a multiple of the window length); ``hits`` the calls counted in it, incremented by one
    atomic upsert per call. Rows older than two windows are deleted opportunistically.
    """

    __tablename__ = "rate_limit_counter"

    subject: str = Field(primary_key=True, max_length=60)
    rate_class: str = Field(primary_key=True, max_length=16)
    window_start: int = Field(sa_column=Column(BigInteger, primary_key=True, index=True))
    hits: int
