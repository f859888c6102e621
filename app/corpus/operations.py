"""Corpus services: one function per operation, ``fn(services, principal, request)``.

Each opens and commits its own session (``async with services.db.session()``) and returns
domain objects; the GraphQL layer converts them. The session-level rules live in
:mod:`app.corpus.documents` and :mod:`app.corpus.as_of`.

``services`` is the process's :class:`app.context.Services`, typed by the Protocols
:class:`app.governance.ServicesPort` and :class:`CorpusServices` (``app.context`` imports this
package, so it cannot be imported here).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy import func, select
from sqlmodel import col

from cairn.app.core.models import Document
from cairn.app.corpus import documents as docs
from cairn.app.corpus.as_of import DocumentRead, read_document
from cairn.app.corpus.documents import UpsertResult
from cairn.app.corpus.indexing import SearchIndexes
from cairn.app.corpus.listing import (
    DocumentListRequest,
    DocumentPage,
    DocumentSummary,
    decode_cursor,
    encode_cursor,
    validate_list_request,
)
from cairn.app.corpus.passages import CitationCheck, PassageView, check_citation, read_section
from cairn.app.governance import Principal, ServicesPort
from cairn.app.observability import span


class CorpusServices(ServicesPort, Protocol):
    """What :func:`write_document` uses beyond :class:`~app.governance.ServicesPort`: the search
    indexes it indexes new passages in, and the hooks run after a new version."""

    @property
    def indexes(self) -> SearchIndexes: ...

    @property
    def on_new_version(self) -> tuple[NewVersionHook, ...]: ...


NewVersionHook = Callable[["CorpusServices", Principal, str], Awaitable[object]]
"""Called as ``hook(services, principal, collection_id)`` after :func:`write_document` recorded a
new document or version (not for an unchanged one), once its passages are indexed. The
composition root (``app.context.bootstrap``) registers them in ``Services.on_new_version``
(learned fields re-extract there), so the corpus needs no import of the packages reacting."""


@dataclass(frozen=True)
class CollectionInfo:
    """A live collection with its live document count."""

    id: str
    name: str
    document_count: int
    created_at: datetime


@dataclass(frozen=True)
class DocumentRequest:
    """Read one document as of a bitemporal point (``None``: now)."""

    document_id: str
    valid_time: datetime | None = None
    system_time: datetime | None = None


@dataclass(frozen=True)
class DocumentWrite:
    """Create a document or record a new version (fields as :func:`app.corpus.documents.upsert_document`)."""

    collection_id: str
    external_id: str
    text: str
    title: str = ""
    media_type: str = "text/plain"
    valid_from: datetime | None = None
    valid_to: datetime | None = None


async def get_document(services: ServicesPort, principal: Principal, request: DocumentRequest) -> DocumentRead:
    """A live document with its versions as of ``request`` (:func:`app.corpus.as_of.read_document`).

    A credential bound to a context set is refused a document outside its set before this
    runs (the adapter, :mod:`app.governance.binding`).

    Raises:
        NotFound: no live document with that id in the caller's workspace.
    """
    async with services.db.session() as s:
        read = await read_document(
            s,
            workspace_id=principal.workspace_id,
            document_id=request.document_id,
            valid_time=request.valid_time,
            system_time=request.system_time,
        )
    return read


async def workspace_collections(services: ServicesPort, principal: Principal) -> list[CollectionInfo]:
    """Live collections of the caller's workspace with live document counts, by name (a
    credential bound to a context set: only the collections of its set's scope, issue 13; a
    collection the set holds only some documents of counts only those)."""
    scope = principal.context_scope
    async with services.db.session() as s:
        rows = await docs.list_collections(s, workspace_id=principal.workspace_id)
        if principal.bound:
            rows = [(c, n) for c, n in rows if scope is not None and c.id in scope.visible_collection_ids]
            partial = {c.id for c, _ in rows if not principal.may_read(c.id)}
            if partial and scope is not None:  # counted over the set's documents only (as `documents` lists them)
                counts = await docs.list_collections(
                    s, workspace_id=principal.workspace_id, document_ids=scope.document_ids
                )
                scoped_n = {c.id: n for c, n in counts}
                rows = [(c, scoped_n[c.id] if c.id in partial else n) for c, n in rows]
    return [CollectionInfo(c.id, c.name, n, c.created_at) for c, n in rows]


async def create_collection(services: ServicesPort, principal: Principal, name: str) -> CollectionInfo:
    """Get or create the live collection ``name`` (count 0, as the mutation reports it).

    Raises:
        BadInput: bad or deleted name.
    """
    async with services.db.session() as s:
        c = await docs.get_or_create_collection(s, workspace_id=principal.workspace_id, name=name)
    return CollectionInfo(c.id, c.name, 0, c.created_at)


async def write_document(services: CorpusServices, principal: Principal, request: DocumentWrite) -> UpsertResult:
    """Upsert a document into a live collection of the caller, then index new passages before returning.

    A new document or version then runs ``services.on_new_version`` hooks in order
    (:data:`NewVersionHook`; e.g. learned fields are re-extracted) before returning.

    Raises:
        NotFound: no such live collection. BadInput: the document input rules.
    """
    started = time.perf_counter()
    async with services.db.session() as s:
        await docs.get_collection(s, workspace_id=principal.workspace_id, collection_id=request.collection_id)
        r = await docs.upsert_document(
            s,
            workspace_id=principal.workspace_id,
            collection_id=request.collection_id,
            external_id=request.external_id,
            title=request.title,
            text=request.text,
            media_type=request.media_type,
            valid_from=request.valid_from,
            valid_to=request.valid_to,
            chunk_max_tokens=services.settings.chunk_max_tokens,
        )
    if r.new_passage_ids:
        with span("ingest.index", {"cairn.passages": len(r.new_passage_ids)}):
            await services.indexes.index_passages(services.db, r.new_passage_ids)
    services.telemetry.record_ingest(
        status=r.status, passages=len(r.new_passage_ids), seconds=time.perf_counter() - started
    )
    if r.status != "unchanged":
        for hook in services.on_new_version:
            await hook(services, principal, request.collection_id)
    return r


async def remove_document(services: ServicesPort, principal: Principal, document_id: str) -> datetime:
    """Record the deletion of a document of the caller's workspace; returns its system time.

    Raises:
        NotFound: no live document with that id.
    """
    async with services.db.session() as s:
        return await docs.delete_document(s, workspace_id=principal.workspace_id, document_id=document_id)


async def list_documents(services: ServicesPort, principal: Principal, request: DocumentListRequest) -> DocumentPage:
    """One page of the live documents of one of the caller's collections, in ``external_id``
    order (:mod:`app.corpus.listing`: cursor format and limits). A credential bound to a context
    set reaches here only for a collection holding something of its set (the adapter refuses
    the others, :mod:`app.governance.binding`) and sees only the set's documents of it.

    Raises:
        NotFound: no live collection with that id in the caller's workspace.
        PageSizeOutOfRange, InvalidDocumentCursor: see :func:`validate_list_request`.
    """
    validate_list_request(request)
    after = decode_cursor(request.after, request.collection_id) if request.after is not None else None
    async with services.db.session() as s:
        coll = await docs.get_collection(s, workspace_id=principal.workspace_id, collection_id=request.collection_id)
        live = [Document.collection_id == coll.id, Document.deleted_at.is_(None)]  # type: ignore[union-attr]
        if principal.bound and not principal.may_read(coll.id):
            # a bound credential: the adapter let the collection through because the set holds
            # some of its documents (app.governance.binding); list and count only those
            scope = principal.context_scope
            live.append(Document.id.in_(sorted(scope.document_ids) if scope is not None else []))  # type: ignore[attr-defined]
        total = int((await s.execute(select(func.count(col(Document.id))).where(*live))).scalar_one())
        q = select(Document).where(*live)
        if after is not None:
            q = q.where(col(Document.external_id) > after)
        rows = list((await s.execute(q.order_by(Document.external_id).limit(request.first + 1))).scalars())
    more = len(rows) > request.first
    rows = rows[: request.first]
    page = tuple(
        DocumentSummary(d.id, d.external_id, d.title, d.media_type, coll.id, coll.name, d.created_at) for d in rows
    )
    cursor = encode_cursor(coll.id, rows[-1].external_id) if rows and more else None
    return DocumentPage(page, total, cursor, more)


@dataclass(frozen=True)
class SectionRequest:
    """A passage and up to ``before``/``after`` neighbours (0–10 each) as of a bitemporal point."""

    passage_id: str
    before: int = 0
    after: int = 0
    valid_time: datetime | None = None
    system_time: datetime | None = None


@dataclass(frozen=True)
class CitationRequest:
    """A cited span (``start``/``end`` character offsets, ``sha256`` of its text) to check
    against the document text visible at a bitemporal point (``None``: now)."""

    document_id: str
    start: int
    end: int
    sha256: str
    version_id: str | None = None
    valid_time: datetime | None = None
    system_time: datetime | None = None


async def read_passages(services: ServicesPort, principal: Principal, request: SectionRequest) -> list[PassageView]:
    """The passage and its neighbours in document order (:func:`app.corpus.passages.read_section`);
    a bound credential is refused a passage outside its set before this runs (the adapter).

    Raises:
        BadInput: neighbours outside 0–10, a time without a zone. NotFound: see ``read_section``.
    """
    async with services.db.session() as s:
        views = await read_section(
            s,
            workspace_id=principal.workspace_id,
            passage_id=request.passage_id,
            before=request.before,
            after=request.after,
            valid_time=request.valid_time,
            system_time=request.system_time,
        )
    return views


async def verify_citation(services: ServicesPort, principal: Principal, request: CitationRequest) -> CitationCheck:
    """VERIFIED / MOVED / CHANGED for a cited span (:func:`app.corpus.passages.check_citation`);
    a bound credential is refused a document outside its set before this runs (the adapter).

    Raises:
        BadInput / NotFound: see ``check_citation``.
    """
    async with services.db.session() as s:
        return await check_citation(
            s,
            workspace_id=principal.workspace_id,
            document_id=request.document_id,
            start=request.start,
            end=request.end,
            sha256=request.sha256,
            version_id=request.version_id,
            valid_time=request.valid_time,
            system_time=request.system_time,
        )
