"""SQLModel tables: Collections, documents and their bitemporal versions, passages, the search-index change log with the values every worker shares, each workspace's corpus generation, and the passages' stored embeddings."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, LargeBinary, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


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
    media_type: str = Field(default="text/plain", max_length=255)  # app.corpus MAX_MEDIA_TYPE_CHARS
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


class CorpusGeneration(SQLModel, table=True):
    """How many committed transactions have changed a workspace's documents.

    Raised by one, at commit, by every transaction that recorded a document version or a
    deletion (:mod:`app.corpus.generation`); no row means generation 0. Rows a process read
    from SQL and kept (the pack path's passage rows, :class:`app.packs.row_cache.PassageRowCache`)
    are valid while the generation is the one they were read at — on every worker, since the
    number lives in the shared database.
    """

    __tablename__ = "corpus_generation"

    workspace_id: str = Field(foreign_key="workspace.id", primary_key=True, max_length=40)
    generation: int = Field(sa_column=Column(BigInteger, nullable=False))


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


class PassageVector(SQLModel, table=True):
    """A passage's embedding by one model, kept so no other worker (or rebuild) encodes it again.

    ``vector`` is the float32 vector as little-endian bytes, exactly as the writing worker put
    it into its own vector index; ``input_sha256`` is the SHA-256 of the text embedded (title
    and passage, :meth:`app.corpus.indexing.SearchIndexes.embedding_input`), so a vector is
    reused only for the same input (:mod:`app.corpus.stored_vectors`). Lives and goes with its
    passage, like the passage's vector in the index.
    """

    __tablename__ = "passage_vector"

    passage_id: str = Field(foreign_key="passage.id", primary_key=True, max_length=40)
    model: str = Field(primary_key=True, max_length=200)
    input_sha256: str = Field(max_length=64)
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
