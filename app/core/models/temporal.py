"""SQLModel tables: Replay records of packs, and temporal statements (the GRAPH source) with the versions they were indexed from."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel


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
