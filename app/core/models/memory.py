"""SQLModel tables: Governed agent memory (SPEC §7)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, Index, LargeBinary, Text
from sqlmodel import Field, SQLModel

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
