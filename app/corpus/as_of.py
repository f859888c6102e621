"""As-of reads of bitemporal documents.

As-of rule (SPEC §2): for ``asOf = (validTime, systemTime)`` a document shows the version
recorded at or before ``systemTime`` whose valid interval contains ``validTime``; where
several do, the one that became valid last wins, then the one recorded last. A document
or collection deleted at or before ``systemTime`` shows nothing.

``superseded`` on a chosen version: a version that became valid later (or at the same moment
but was recorded later) had been recorded by ``systemTime`` — asking with a ``systemTime``
before the newer version was recorded shows ``superseded = false``, as Cairn knew then.

``validTo`` as read: a version recorded with an open interval (``validTo`` null) that a
later version (in valid time) replaces reports ``validTo`` = the next version's
``validFrom``, again counting only versions recorded by ``systemTime``
(:func:`effective_valid_to`). The rules, as a table, are in docs/api.md "As of a point in time".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.errors import NotFound
from cairn.app.core.ids import as_utc, utcnow
from cairn.app.core.models import Collection, Document, DocumentVersion, VersionPassage
from cairn.app.core.text_rules import validate_identifier


@dataclass(frozen=True)
class VersionMeta:
    """The time columns of a version row (what as-of resolution needs; no text)."""

    id: str
    document_id: str
    number: int
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime


@dataclass(frozen=True)
class VersionView:
    """Metadata of a document version chosen by an as-of read (no text)."""

    id: str
    document_id: str
    number: int
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    superseded: bool


def _order(v: VersionMeta) -> tuple:
    return (as_utc(v.valid_from), as_utc(v.recorded_at), v.number)


def effective_valid_to(version: VersionMeta, known: Iterable[VersionMeta]) -> datetime | None:
    """The end of ``version``'s valid interval as known from ``known`` (same document).

    Its own ``valid_to`` when the next version (the earliest ``valid_from`` later than its
    own, among ``known``) starts later or there is none; else that next ``valid_from``. So
    an open interval (``valid_to`` null) that a later version replaces in valid time ends
    where the replacement starts. Pass only the versions recorded by the read's system time.
    """
    own = as_utc(version.valid_to) if version.valid_to is not None else None
    start = as_utc(version.valid_from)
    later = [as_utc(v.valid_from) for v in known if as_utc(v.valid_from) > start]
    nxt = min(later) if later else None
    if nxt is None:
        return own
    return nxt if own is None or nxt < own else own


def choose_versions(
    versions: Iterable[VersionMeta], *, valid_time: datetime, system_time: datetime, now: datetime | None = None
) -> dict[str, VersionView]:
    """Pick, per document, the version visible at ``(valid_time, system_time)``.

    Args:
        versions: Every version of the documents of interest (text not needed).
        now: Unused (kept for callers): ``superseded`` is judged at ``system_time``.

    Returns:
        ``document_id -> VersionView``; documents with no visible version are absent.
        ``superseded`` is true when a version that became valid later (or the same moment
        but recorded later) had been recorded by ``system_time``; ``valid_to`` is
        :func:`effective_valid_to` over the versions recorded by ``system_time``.
    """
    by_doc: dict[str, list[VersionMeta]] = defaultdict(list)
    for v in versions:
        by_doc[v.document_id].append(v)
    out: dict[str, VersionView] = {}
    for doc_id, vs in by_doc.items():
        known = [v for v in vs if as_utc(v.recorded_at) <= system_time]
        visible = [
            v
            for v in known
            if as_utc(v.valid_from) <= valid_time and (v.valid_to is None or valid_time < as_utc(v.valid_to))
        ]
        if not visible:
            continue
        chosen = max(visible, key=_order)
        superseded = any(_order(v) > _order(chosen) for v in known)
        out[doc_id] = VersionView(
            id=chosen.id,
            document_id=doc_id,
            number=chosen.number,
            valid_from=as_utc(chosen.valid_from),
            valid_to=effective_valid_to(chosen, known),
            recorded_at=as_utc(chosen.recorded_at),
            superseded=superseded,
        )
    return out


async def visible_versions(
    s: AsyncSession,
    *,
    workspace_id: str,
    document_ids: Sequence[str],
    valid_time: datetime,
    system_time: datetime,
) -> dict[str, VersionView]:
    """As-of version per document (see module doc), honouring deletions at ``system_time``.

    Returns:
        ``document_id -> VersionView`` for documents of the workspace visible then.
    """
    if not document_ids:
        return {}
    cols = (
        col(DocumentVersion.id),
        col(DocumentVersion.document_id),
        col(DocumentVersion.number),
        col(DocumentVersion.valid_from),
        col(DocumentVersion.valid_to),
        col(DocumentVersion.recorded_at),
    )
    rows: list = []
    ids = list(dict.fromkeys(document_ids))
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        q = (
            select(*cols, col(Document.deleted_at), col(Collection.deleted_at))
            .join(Document, col(Document.id) == col(DocumentVersion.document_id))
            .join(Collection, col(Collection.id) == col(Document.collection_id))
            .where(col(DocumentVersion.document_id).in_(part), col(Document.workspace_id) == workspace_id)
        )
        rows.extend((await s.execute(q)).all())
    live_rows = [r for r in rows if not deleted_by(r[6], system_time) and not deleted_by(r[7], system_time)]
    versions = [VersionMeta(*r[:6]) for r in live_rows]
    return choose_versions(versions, valid_time=valid_time, system_time=system_time)


def deleted_by(deleted_at: datetime | None, system_time: datetime) -> bool:
    """True when a deletion time is at or before ``system_time`` (the as-of rule for deletions:
    a row deleted later is read as it was at ``system_time``)."""
    return deleted_at is not None and as_utc(deleted_at) <= system_time


@dataclass(frozen=True)
class DocumentRead:
    """A document with the versions the caller may see (text included)."""

    document: Document
    versions: list[DocumentVersion]
    chosen_version_id: str | None
    passages: dict[str, list[tuple[str, int, int, int]]]
    valid_to: dict[str, datetime | None] = field(default_factory=dict)
    """Version id → end of its valid interval as read (:func:`effective_valid_to`)."""


async def read_document(
    s: AsyncSession,
    *,
    workspace_id: str,
    document_id: str,
    valid_time: datetime | None = None,
    system_time: datetime | None = None,
) -> DocumentRead:
    """Read a live document with every version recorded by ``system_time`` (default now).

    ``chosen_version_id`` is the version visible at ``(valid_time, system_time)``;
    ``passages`` maps version id → ``[(passage_id, ordinal, start, end)]``; ``valid_to``
    each version's interval end as known at ``system_time`` (:func:`effective_valid_to`).

    A deletion is a system-time event like any other (docs/api.md "As of a point in time"): a
    document (or its collection) deleted after ``system_time`` reads as it was then; deleted
    at or before it, it is not found.

    Raises:
        NotFound: no document with that id in the workspace, or it (or its collection) was
            deleted by ``system_time`` (history stays readable as of earlier times until purged).
    """
    validate_identifier(document_id, "id")
    now = utcnow()
    system_time = min(system_time or now, now)
    doc = await s.get(Document, document_id)
    if doc is None or doc.workspace_id != workspace_id or deleted_by(doc.deleted_at, system_time):
        raise NotFound(f"document {document_id!r} not found", field="id")
    coll = await s.get(Collection, doc.collection_id)
    if coll is None or deleted_by(coll.deleted_at, system_time):
        raise NotFound(f"document {document_id!r} not found", field="id")
    valid_time = valid_time or now
    versions = list(
        (
            await s.execute(
                select(DocumentVersion)
                .where(col(DocumentVersion.document_id) == document_id)
                .order_by(col(DocumentVersion.number))
            )
        ).scalars()
    )
    versions = [v for v in versions if as_utc(v.recorded_at) <= system_time]
    metas = [VersionMeta(v.id, v.document_id, v.number, v.valid_from, v.valid_to, v.recorded_at) for v in versions]
    chosen = choose_versions(metas, valid_time=valid_time, system_time=system_time).get(document_id)
    spans: dict[str, list[tuple[str, int, int, int]]] = defaultdict(list)
    if versions:
        rows = await s.execute(
            select(
                col(VersionPassage.version_id),
                col(VersionPassage.passage_id),
                col(VersionPassage.ordinal),
                col(VersionPassage.start),
                col(VersionPassage.end),
            )
            .where(col(VersionPassage.version_id).in_([v.id for v in versions]))
            .order_by(col(VersionPassage.version_id), col(VersionPassage.ordinal))
        )
        for r in rows.all():
            spans[r[0]].append((r[1], r[2], r[3], r[4]))
    ends = {m.id: effective_valid_to(m, metas) for m in metas}
    return DocumentRead(doc, versions, chosen.id if chosen else None, dict(spans), ends)
