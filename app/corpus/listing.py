"""Paged document listing of one collection — the rules of the ``documents(collectionId, first,
after)`` query and ``cairn documents list`` (the service is
:func:`app.corpus.operations.list_documents`).

Order: by ``external_id`` (unique per collection, so the order is total and stable while
documents are added or deleted between pages). A cursor is opaque to callers:
``base64url(JSON {"c": collection id, "k": last external id of the page})``. It names its
collection, so a cursor of another collection is refused rather than silently misapplied.

Errors: ``first`` outside 1–:data:`MAX_PAGE` → 400 ``PAGE_SIZE_OUT_OF_RANGE`` (field
``first``, ``limit``); a cursor that does not decode, or one of another collection → 400
``INVALID_CURSOR`` (field ``after``); an unknown or deleted collection → 404 ``NOT_FOUND``.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime

from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier

DEFAULT_PAGE = 50
MAX_PAGE = 200


class PageSizeOutOfRange(BadInput):
    """``first`` outside 1–200 (400 ``PAGE_SIZE_OUT_OF_RANGE``, ``field``, ``limit``)."""

    code = "PAGE_SIZE_OUT_OF_RANGE"


class InvalidDocumentCursor(BadInput):
    """An ``after`` cursor not issued for this collection's listing (400 ``INVALID_CURSOR``)."""

    code = "INVALID_CURSOR"


@dataclass(frozen=True)
class DocumentListRequest:
    """One page of a collection's live documents: ``first`` (1–200) after ``after`` (a cursor or None)."""

    collection_id: str
    first: int = DEFAULT_PAGE
    after: str | None = None


@dataclass(frozen=True)
class DocumentSummary:
    """A live document without its text: ids, the caller's external id, title, media type, collection."""

    id: str
    external_id: str
    title: str
    media_type: str
    collection_id: str
    collection_name: str
    created_at: datetime


@dataclass(frozen=True)
class DocumentPage:
    """A page of documents in ``external_id`` order, the collection's live total and the next cursor
    (``None`` on the last page)."""

    documents: tuple[DocumentSummary, ...]
    total_count: int
    end_cursor: str | None
    has_next_page: bool


def encode_cursor(collection_id: str, external_id: str) -> str:
    """The opaque cursor after ``external_id`` in ``collection_id`` (module doc)."""
    raw = json.dumps({"c": collection_id, "k": external_id}, separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, collection_id: str) -> str:
    """The external id a cursor points after.

    Raises:
        InvalidDocumentCursor: not a cursor of this listing, or of another collection.
    """
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
        key, coll = data["k"], data["c"]
        if not isinstance(key, str) or not isinstance(coll, str):
            raise ValueError
    except (ValueError, TypeError, KeyError, UnicodeError, binascii.Error):
        raise InvalidDocumentCursor(
            "after is not a cursor issued by documents(); pass endCursor from the previous page", field="after"
        ) from None
    if coll != collection_id:
        raise InvalidDocumentCursor(
            f"after is a cursor of collection {coll!r}, not of {collection_id!r}", field="after"
        )
    return key


def validate_list_request(request: DocumentListRequest) -> None:
    """Input rules of :func:`list_documents` (run by the GraphQL adapter before the call).

    Raises:
        BadInput: ``collectionId`` not an id. PageSizeOutOfRange: ``first``. InvalidDocumentCursor: ``after``.
    """
    validate_identifier(request.collection_id, "collectionId")
    if not 1 <= request.first <= MAX_PAGE:
        raise PageSizeOutOfRange(
            f"first must be 1–{MAX_PAGE} (got {request.first}); page with after=endCursor for more",
            field="first",
            limit=MAX_PAGE,
        )
    if request.after is not None:
        decode_cursor(request.after, request.collection_id)
