"""Collections, documents and bitemporal versions: writes (upsert, delete) and as-of reads.

Versioning rules:
- Upserting a document whose text and valid interval equal its latest version is a no-op.
- Otherwise a new version is recorded (``recorded_at`` = server now). ``valid_from``
  defaults to the recording time when the caller gives none ("true from when we learned it").
- Concurrent upserts of one collection are serialised (:func:`app.core.db.serialize`): each reads
  the latest version committed by the one before it, so N racing upserts record N versions.
- Passages come from :func:`retrieval.chunking.chunk_text`; a passage id is
  ``stable_id("psg", document_id, sha256(text), occurrence)`` so unchanged paragraphs keep
  their ids (and their index entries) across versions.

As-of reads live in :mod:`app.corpus.as_of`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import serialize
from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import as_utc, new_id, sha256_text, stable_id, utcnow
from cairn.app.core.models import Collection, Document, DocumentVersion, Passage, VersionPassage
from cairn.app.core.text_rules import require_storable, validate_identifier, validate_name
from cairn.app.corpus.changes import record_passages
from cairn.app.corpus.generation import mark_changed
from cairn.retrieval.chunking import Chunk, chunk_text
from cairn.retrieval.tokens import count_tokens

MAX_DOCUMENT_CHARS = 2_000_000
MAX_TITLE_CHARS = 1_000
MAX_EXTERNAL_ID_CHARS = 512
# a media type's length (RFC 6838: type and subtype up to 127 characters each); 64 was too short
# for the .docx type ingest writes (71 characters: PostgreSQL refused every .docx document)
MAX_MEDIA_TYPE_CHARS = 255


@dataclass(frozen=True)
class UpsertResult:
    """Outcome of one document upsert.

    Attributes:
        document_id: Cairn id of the document.
        version_id: The latest version (new or unchanged).
        status: ``created`` (first version), ``updated`` (new version) or ``unchanged``.
        new_passage_ids: Passages first seen in this call (to be indexed).
    """

    document_id: str
    version_id: str
    status: str
    new_passage_ids: tuple[str, ...]


async def get_or_create_collection(s: AsyncSession, *, workspace_id: str, name: str) -> Collection:
    """Return the live collection ``name`` in the workspace, creating it if missing.

    Raises:
        BadInput: ``name`` is not a name of 1–120 characters (:func:`app.core.text_rules.validate_name`).
    """
    validate_name(name, "name", 120)
    await serialize(s, "collection-name", workspace_id, name)  # get-or-create: one creator per name
    row = (
        await s.execute(
            select(Collection).where(col(Collection.workspace_id) == workspace_id, col(Collection.name) == name)
        )
    ).scalar_one_or_none()
    if row is not None and row.deleted_at is None:
        return row
    if row is not None:
        raise BadInput(f"collection {name!r} was deleted; choose another name", field="name")
    row = Collection(id=new_id("col"), workspace_id=workspace_id, name=name, created_at=utcnow())
    s.add(row)
    await s.flush()
    return row


async def get_collection(s: AsyncSession, *, workspace_id: str, collection_id: str) -> Collection:
    """Return a live collection of the workspace.

    Raises:
        BadInput: ``collection_id`` is not an id. NotFound: no such live collection in this workspace.
    """
    validate_identifier(collection_id, "collectionId")
    row = await s.get(Collection, collection_id)
    if row is None or row.workspace_id != workspace_id or row.deleted_at is not None:
        raise NotFound(f"collection {collection_id!r} not found", field="collectionId")
    return row


def validate_document_input(
    external_id: str, title: str, text: str, valid_from: datetime | None, valid_to: datetime | None
) -> None:
    """Document input rules; fields are named by their GraphQL input path (``input.…``).

    Raises:
        BadInput: the first rule broken (external id, title, text, valid interval).
    """
    validate_identifier(external_id, "input.externalId", MAX_EXTERNAL_ID_CHARS)
    validate_name(title, "input.title", MAX_TITLE_CHARS, min_len=0)
    require_storable(text, "input.text")
    if not text.strip():
        raise BadInput("input.text must contain non-whitespace characters", field="input.text")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise BadInput("input.text must be at most 2,000,000 characters", field="input.text", limit=MAX_DOCUMENT_CHARS)
    for value, name in ((valid_from, "input.validFrom"), (valid_to, "input.validTo")):
        if value is not None and value.tzinfo is None:
            raise BadInput(f"{name} needs a timezone (e.g. 2025-01-01T00:00:00Z)", field=name)
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise BadInput("input.validTo must be later than input.validFrom", field="input.validTo")


async def upsert_document(
    s: AsyncSession,
    *,
    workspace_id: str,
    collection_id: str,
    external_id: str,
    title: str,
    text: str,
    media_type: str = "text/plain",
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    chunk_max_tokens: int = 200,
    now: datetime | None = None,
) -> UpsertResult:
    """Create a document or record a new version when its content or valid time changed.

    Args:
        s: Open session; the caller commits.
        text: The version text; passages are exact spans of it.
        valid_from / valid_to: Valid-time interval; ``valid_from`` defaults to now.

    Returns:
        :class:`UpsertResult`; ``new_passage_ids`` lists passages that need indexing.

    Raises:
        BadInput: empty text, over-long fields, or ``validTo <= validFrom``.
    """
    validate_document_input(external_id, title, text, valid_from, valid_to)
    # read-latest-then-insert-next: writers of one collection take turns (one lock per
    # collection, not per document, so a batch of upserts cannot deadlock with another)
    await serialize(s, "collection-documents", collection_id)
    now = now or utcnow()
    doc = (
        await s.execute(
            select(Document).where(
                col(Document.collection_id) == collection_id, col(Document.external_id) == external_id
            )
        )
    ).scalar_one_or_none()
    content_sha = sha256_text(text)
    latest: DocumentVersion | None = None
    status = "created"
    if doc is None:
        doc = Document(
            id=stable_id("doc", workspace_id, collection_id, external_id),
            workspace_id=workspace_id,
            collection_id=collection_id,
            external_id=external_id,
            title=title,
            media_type=media_type,
            created_at=now,
        )
        s.add(doc)
        await s.flush()
    else:
        latest = (
            await s.execute(
                select(DocumentVersion)
                .where(col(DocumentVersion.document_id) == doc.id)
                .order_by(col(DocumentVersion.number).desc())
                .limit(1)
            )
        ).scalar_one_or_none()
        same_validity = valid_from is None or (
            latest is not None
            and as_utc(latest.valid_from) == as_utc(valid_from)
            and (latest.valid_to and as_utc(latest.valid_to)) == (valid_to and as_utc(valid_to))
        )
        if (
            doc.deleted_at is None
            and latest is not None
            and latest.content_sha256 == content_sha
            and same_validity
            and doc.title == title
        ):
            return UpsertResult(doc.id, latest.id, "unchanged", ())
        status = "updated"
        doc.title = title
        doc.media_type = media_type
        doc.deleted_at = None
        s.add(doc)
    number = (latest.number + 1) if latest else 1
    version = DocumentVersion(
        id=stable_id("ver", doc.id, number),
        document_id=doc.id,
        workspace_id=workspace_id,
        number=number,
        text=text,
        content_sha256=content_sha,
        valid_from=valid_from or now,
        valid_to=valid_to,
        recorded_at=now,
    )
    s.add(version)
    chunks = chunk_text(text, max_tokens=chunk_max_tokens)
    occurrences: dict[str, int] = defaultdict(int)
    planned: list[tuple[str, str, Chunk]] = []
    for chunk in chunks:
        psha = sha256_text(chunk.text)
        occ = occurrences[psha]
        occurrences[psha] += 1
        planned.append((stable_id("psg", doc.id, psha, occ), psha, chunk))
    existing: set[str] = set()
    ids = [p[0] for p in planned]
    for i in range(0, len(ids), 500):
        existing.update(
            (await s.execute(select(col(Passage.id)).where(col(Passage.id).in_(ids[i : i + 500])))).scalars()
        )
    new_ids: list[str] = []
    for ordinal, (pid, psha, chunk) in enumerate(planned):
        if pid not in existing:
            s.add(
                Passage(
                    id=pid,
                    document_id=doc.id,
                    workspace_id=workspace_id,
                    collection_id=collection_id,
                    sha256=psha,
                    text=chunk.text,
                    token_count=count_tokens(chunk.text),
                )
            )
            existing.add(pid)
            new_ids.append(pid)
        s.add(
            VersionPassage(
                version_id=version.id,
                passage_id=pid,
                ordinal=ordinal,
                start=chunk.start,
                end=chunk.end,
            )
        )
    await s.flush()
    await record_passages(s, new_ids, title)  # the search-index change log, in this transaction
    mark_changed(s, workspace_id)  # packs' cached passage rows of this workspace expire at commit
    return UpsertResult(doc.id, version.id, status, tuple(new_ids))


async def delete_document(s: AsyncSession, *, workspace_id: str, document_id: str) -> datetime:
    """Record the deletion of a document at the current system time.

    Returns:
        The deletion's system time.

    Raises:
        NotFound: no live document with that id in the workspace.
    """
    validate_identifier(document_id, "id")
    doc = await s.get(Document, document_id)
    if doc is None or doc.workspace_id != workspace_id or doc.deleted_at is not None:
        raise NotFound(f"document {document_id!r} not found", field="id")
    doc.deleted_at = utcnow()
    s.add(doc)
    await s.flush()
    mark_changed(s, workspace_id)
    from cairn.app.memory import purge_for_documents  # memories citing it go with it (SPEC §7)

    await purge_for_documents(s, document_ids=[doc.id])
    return doc.deleted_at


async def list_collections(
    s: AsyncSession, *, workspace_id: str, document_ids: frozenset[str] | None = None
) -> list[tuple[Collection, int]]:
    """Live collections of the workspace with their live document counts, by name.

    ``document_ids`` (a context set's single documents) counts only those documents.
    """
    from sqlalchemy import func

    on = (Document.collection_id == Collection.id) & Document.deleted_at.is_(None)  # type: ignore[union-attr]
    if document_ids is not None:
        on = on & Document.id.in_(sorted(document_ids))  # type: ignore[attr-defined]
    rows = await s.execute(
        select(Collection, func.count(col(Document.id)))
        .outerjoin(Document, on)
        .where(col(Collection.workspace_id) == workspace_id, col(Collection.deleted_at).is_(None))
        .group_by(Collection.id)
        .order_by(Collection.name)
    )
    return [(r[0], int(r[1])) for r in rows.all()]
