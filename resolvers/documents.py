"""Collections and documents: reads (``document``, ``documents``, ``collections``) and member-only writes."""

from __future__ import annotations

from datetime import datetime

import strawberry

from cairn.app import corpus as docs
from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier, validate_name
from cairn.app.corpus import (
    MAX_MEDIA_TYPE_CHARS,
    MAX_PAGE,
    CollectionInfo,
    DocumentListRequest,
    DocumentPage,
    DocumentRead,
    DocumentRequest,
    DocumentWrite,
    validate_list_request,
)
from cairn.app.governance import Governed, Principal
from cairn.resolvers.packs import AsOfInput
from cairn.resolvers.types import Info


@strawberry.type(description="A span of a version: version.text[start:end] is the passage text.")
class PassageSpan:
    passage_id: strawberry.ID
    ordinal: int
    start: int
    end: int


@strawberry.type(description="One recorded version of a document.")
class DocumentVersion:
    id: strawberry.ID
    number: int
    text: str
    content_sha256: str
    valid_from: datetime
    valid_to: datetime | None = strawberry.field(
        description="End of the valid interval as known at asOf.systemTime: an open interval that a later version replaces ends at that version's validFrom."
    )
    recorded_at: datetime = strawberry.field(description="System time: when Cairn recorded this version.")
    passages: list[PassageSpan]


@strawberry.type(description="A document and its versions as recorded by asOf.systemTime.")
class Document:
    id: strawberry.ID
    collection_id: strawberry.ID
    external_id: str
    title: str
    media_type: str
    created_at: datetime
    versions: list[DocumentVersion]
    current_version_id: strawberry.ID | None = strawberry.field(
        description="The version visible at asOf (null: none then)."
    )


@strawberry.type(description="A live document without its text (a row of documents()).")
class DocumentSummary:
    id: strawberry.ID
    external_id: str = strawberry.field(
        description="Your key for the document (`cairn ingest`: the file's path relative to the ingested root)."
    )
    title: str
    media_type: str
    collection_id: strawberry.ID
    collection_name: str
    created_at: datetime


@strawberry.type(description="A page of a collection's live documents in externalId order.")
class DocumentConnection:
    documents: list[DocumentSummary]
    total_count: int = strawberry.field(description="Live documents in the collection (all pages).")
    end_cursor: str | None = strawberry.field(description="Pass as after for the next page; null on the last page.")
    has_next_page: bool


@strawberry.type
class Collection:
    id: strawberry.ID
    name: str
    document_count: int
    created_at: datetime


@strawberry.input
class UpsertDocumentInput:
    collection_id: strawberry.ID
    external_id: str = strawberry.field(description="Your key for the document, 1–512 characters.")
    text: str = strawberry.field(description="Full text, 1–2,000,000 characters.")
    title: str = ""
    media_type: str = "text/plain"
    valid_from: datetime | None = strawberry.field(default=None, description="Default: now.")
    valid_to: datetime | None = None


@strawberry.type
class UpsertDocumentResult:
    document_id: strawberry.ID
    version_id: strawberry.ID
    status: str = strawberry.field(description="created | updated | unchanged")
    new_passages: int


@strawberry.type
class DeleteDocumentResult:
    document_id: strawberry.ID
    deleted_at: datetime


def to_document(read: DocumentRead) -> Document:
    """Service read → GraphQL document."""
    d = read.document
    return Document(
        id=strawberry.ID(d.id),
        collection_id=strawberry.ID(d.collection_id),
        external_id=d.external_id,
        title=d.title,
        media_type=d.media_type,
        created_at=d.created_at,
        current_version_id=strawberry.ID(read.chosen_version_id) if read.chosen_version_id is not None else None,
        versions=[
            DocumentVersion(
                id=strawberry.ID(v.id),
                number=v.number,
                text=v.text,
                content_sha256=v.content_sha256,
                valid_from=v.valid_from,
                valid_to=read.valid_to.get(v.id, v.valid_to),
                recorded_at=v.recorded_at,
                passages=[
                    PassageSpan(passage_id=strawberry.ID(p[0]), ordinal=p[1], start=p[2], end=p[3])
                    for p in read.passages.get(v.id, [])
                ],
            )
            for v in read.versions
        ],
    )


def to_collection(c: CollectionInfo) -> Collection:
    """Service collection → GraphQL collection."""
    return Collection(id=strawberry.ID(c.id), name=c.name, document_count=c.document_count, created_at=c.created_at)


def to_connection(page: DocumentPage) -> DocumentConnection:
    """Service page → GraphQL connection."""
    return DocumentConnection(
        documents=[
            DocumentSummary(
                id=strawberry.ID(d.id),
                external_id=d.external_id,
                title=d.title,
                media_type=d.media_type,
                collection_id=strawberry.ID(d.collection_id),
                collection_name=d.collection_name,
                created_at=d.created_at,
            )
            for d in page.documents
        ],
        total_count=page.total_count,
        end_cursor=page.end_cursor,
        has_next_page=page.has_next_page,
    )


def _validate_documents(collection_id: str, first: int = 50, after: str | None = None) -> None:
    validate_list_request(DocumentListRequest(collection_id, first, after))


def _validate_id(id: str, **_: object) -> None:
    validate_identifier(id, "id")


def _validate_read(id: str, as_of: AsOfInput | None = None) -> None:
    _validate_id(id)
    for name, label in (("valid_time", "asOf.validTime"), ("system_time", "asOf.systemTime")):
        value = getattr(as_of, name, None) if as_of else None
        if value is not None and value.tzinfo is None:
            raise BadInput(f"{label} needs a timezone (e.g. 2025-01-01T00:00:00Z)", field=label)


def _validate_collection(name: str) -> None:
    validate_name(name, "name", 120)


def _validate_upsert(input: UpsertDocumentInput) -> None:
    validate_identifier(input.collection_id, "input.collectionId")
    docs.validate_document_input(input.external_id, input.title, input.text, input.valid_from, input.valid_to)
    validate_identifier(input.media_type, "input.mediaType", MAX_MEDIA_TYPE_CHARS)


@strawberry.type
class DocumentQuery:
    @strawberry.field(
        description="A document with its versions (text included) as of a bitemporal point.",
        extensions=[Governed("document", validate=_validate_read)],
    )
    async def document(
        self, info: Info, id: strawberry.ID, principal: Principal, as_of: AsOfInput | None = None
    ) -> Document:
        request = DocumentRequest(
            document_id=id,
            valid_time=as_of.valid_time if as_of else None,
            system_time=as_of.system_time if as_of else None,
        )
        return to_document(await docs.get_document(info.context.services, principal, request))

    @strawberry.field(
        description=f"A page of a collection's live documents in externalId order: first 1–{MAX_PAGE} "
        "(PAGE_SIZE_OUT_OF_RANGE beyond), after = endCursor of the previous page (INVALID_CURSOR otherwise).",
        extensions=[Governed("documents", validate=_validate_documents)],
    )
    async def documents(
        self,
        info: Info,
        collection_id: strawberry.ID,
        principal: Principal,
        first: int = 50,
        after: str | None = None,
    ) -> DocumentConnection:
        request = DocumentListRequest(collection_id=collection_id, first=first, after=after)
        return to_connection(await docs.list_documents(info.context.services, principal, request))

    @strawberry.field(
        description="Live collections of your workspace with their live document counts (a bound credential: those of its context set).",
        extensions=[Governed("collections")],
    )
    async def collections(self, info: Info, principal: Principal) -> list[Collection]:
        return [to_collection(c) for c in await docs.workspace_collections(info.context.services, principal)]


@strawberry.type
class DocumentMutation:
    @strawberry.mutation(
        description="Create a collection (collection:write).",
        extensions=[Governed("createCollection", validate=_validate_collection)],
    )
    async def create_collection(self, info: Info, name: str, principal: Principal) -> Collection:
        return to_collection(await docs.create_collection(info.context.services, principal, name))

    @strawberry.mutation(
        description="Create a document or record a new version (document:write). Indexed before returning.",
        extensions=[Governed("upsertDocument", validate=_validate_upsert)],
    )
    async def upsert_document(
        self, info: Info, input: UpsertDocumentInput, principal: Principal
    ) -> UpsertDocumentResult:
        request = DocumentWrite(
            collection_id=input.collection_id,
            external_id=input.external_id,
            text=input.text,
            title=input.title,
            media_type=input.media_type,
            valid_from=input.valid_from,
            valid_to=input.valid_to,
        )
        r = await docs.write_document(info.context.services, principal, request)
        return UpsertDocumentResult(
            document_id=strawberry.ID(r.document_id),
            version_id=strawberry.ID(r.version_id),
            status=r.status,
            new_passages=len(r.new_passage_ids),
        )

    @strawberry.mutation(
        description="Delete a document (recorded at the current system time; history kept).",
        extensions=[Governed("deleteDocument", validate=_validate_id)],
    )
    async def delete_document(self, info: Info, id: strawberry.ID, principal: Principal) -> DeleteDocumentResult:
        at = await docs.remove_document(info.context.services, principal, id)
        return DeleteDocumentResult(document_id=id, deleted_at=at)
