"""SQLModel tables: Curated context: context sets and their versions, query templates, reported context gaps."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


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
    # resolution (issue 36): OPEN until an editor adds an entry for it (RESOLVED: the set and entry
    # it became) or dismisses it (DISMISSED: resolution = the reason); resolved_* say who and when
    status: str = Field(default="OPEN", max_length=16, sa_column_kwargs={"server_default": "OPEN"})
    resolution: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    resolved_by: str | None = Field(default=None, max_length=40)
    resolved_at: datetime | None = None
    resolved_context_set_id: str | None = Field(default=None, max_length=40)
    resolved_entry_id: str | None = Field(default=None, max_length=64)
