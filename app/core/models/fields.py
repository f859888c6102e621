"""SQLModel tables: Learned fields (SPEC §5): definitions, extraction state, values, labels."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


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
