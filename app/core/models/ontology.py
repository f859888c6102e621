"""SQLModel tables: Ontology (SPEC §6): knowledge networks, object types, instances, trace receipts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

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
