"""The pack pipeline's database reads and writes besides candidate rows (:mod:`app.packs.resolve`).

Split from :mod:`app.packs.service`: the filter-id check before retrieval
(:func:`check_filters`), whole-document texts (:func:`whole_documents`), the read re-check
just before items are emitted (:func:`readable_now`) and the replay record
(:func:`record_replay`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import insert, literal, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.errors import NotFound
from cairn.app.core.ids import sha256_text, utcnow
from cairn.app.core.models import Collection, Document, DocumentVersion, ReplayRecord, Workspace
from cairn.app.corpus import deleted_by
from cairn.app.governance import Principal
from cairn.app.packs.pipeline_types import Candidate, PackEntry, PackServices, WholeDocument
from cairn.app.packs.replay_codec import RecordedItem, encode_record, replay_conditions
from cairn.app.packs.types import PackHeader, PackItem, PackRequest
from cairn.retrieval.dedup import DedupGroup
from cairn.retrieval.tokens import count_tokens

REPLAY_TTL = timedelta(days=30)


async def _require_in_workspace(
    s: AsyncSession,
    model: type[Collection] | type[Document],
    ids: list[str],
    workspace_id: str,
    field: str,
    noun: str,
) -> None:
    """Raise NotFound naming ``field`` unless every id is a ``model`` row of the workspace."""
    found = set(
        (
            await s.execute(
                select(col(model.id)).where(col(model.id).in_(ids), col(model.workspace_id) == workspace_id)
            )
        ).scalars()
    )
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"{field}: no {noun} {missing} in this workspace", field=field)


async def check_filters(
    services: PackServices, principal: Principal, req: PackRequest
) -> tuple[list[str] | None, list[str] | None]:
    """Check filter ids belong to the caller's workspace; return them as lists.

    Returns:
        ``(collection ids, document ids)``, each None when not filtered.

    Raises:
        NotFound: an id outside the workspace (``field`` names the filter).
    """
    colls = list(req.collection_ids) if req.collection_ids else None
    docs = list(req.document_ids) if req.document_ids else None
    async with services.db.session() as s:
        if colls:
            await _require_in_workspace(
                s, Collection, colls, principal.workspace_id, "input.filters.collectionIds", "collection"
            )
        if docs:
            await _require_in_workspace(
                s, Document, docs, principal.workspace_id, "input.filters.documentIds", "document"
            )
    return colls, docs


async def readable_now(
    services: PackServices, principal: Principal, doc_ids: set[str], *, as_of: datetime | None = None
) -> set[str]:
    """Documents the principal may read at this instant: ``document:read`` held and the document
    and its collection live — or, for a pack read as of a given system time (``as_of``), not
    deleted by then (a deletion is a system-time event like any other: docs/api.md "As of a point
    in time"; its history stays until purged)."""
    if not doc_ids:
        return set()
    if "document:read" not in principal.permissions:
        return set()
    async with services.db.session() as s:
        rows = await s.execute(
            select(col(Document.id), col(Document.deleted_at), col(Collection.deleted_at))
            .join(Collection, col(Collection.id) == col(Document.collection_id))
            .where(col(Document.id).in_(sorted(doc_ids)), col(Document.workspace_id) == principal.workspace_id)
        )
        if as_of is None:
            return {d for d, doc_gone, coll_gone in rows.all() if doc_gone is None and coll_gone is None}
        return {
            d
            for d, doc_gone, coll_gone in rows.all()
            if not deleted_by(doc_gone, as_of) and not deleted_by(coll_gone, as_of)
        }


async def whole_documents(services: PackServices, groups: Sequence[DedupGroup[Candidate]]) -> list[PackEntry]:
    """``WHOLE_DOCUMENT`` entries for ``groups`` (one per document: the group whose kept
    candidate ranked it first), with their chosen version's full text and its token count."""
    if not groups:
        return []
    async with services.db.session() as s:
        rows = await s.execute(
            select(col(DocumentVersion.id), col(DocumentVersion.text), col(DocumentVersion.content_sha256)).where(
                col(DocumentVersion.id).in_([g.kept.version for g in groups])
            )
        )
        texts = {r[0]: (r[1], r[2]) for r in rows.all()}
    out = []
    for g in groups:
        text, sha = texts[g.kept.version]
        out.append(PackEntry("WHOLE_DOCUMENT", g, count_tokens(text), WholeDocument(text, sha)))
    return out


def recorded_item(i: PackItem) -> RecordedItem:
    """What the replay record keeps of one item: ids, offsets and a SHA-256, never text.

    An approved context-set entry has no citation (context-set hook): it is kept as
    ``document_id`` = the set id, ``version_id`` = ``"<entry id>@<set version>"``, no passage,
    offsets 0 and the SHA-256 of the item text, so VERIFY can tell whether the set changed.
    """
    if i.citation is not None:
        c = i.citation
        return RecordedItem(i.rank, i.kind, c.document_id, c.version_id, c.passage_id, c.start, c.end, c.sha256)
    ref = i.context_set_entry
    if ref is None:  # pragma: no cover - every uncited item is a set entry
        raise ValueError(f"pack item {i.rank} has neither a citation nor a context-set entry")
    version = f"{ref.entry_id}@{ref.set_version}"
    return RecordedItem(i.rank, i.kind, ref.context_set_id, version, None, 0, 0, sha256_text(i.text))


async def record_replay(
    services: PackServices,
    principal: Principal,
    header: PackHeader,
    req: PackRequest,
    items: Sequence[PackItem],
) -> float:
    """Store the pack's ids and hashes (never text) for replay, expiring after 30 days.

    Compact binary payload (:mod:`app.packs.replay_codec`); a non-retaining workspace keeps
    no record (its packs cannot be replayed: ``replay`` answers ``NOT_FOUND`` saying so).

    Returns:
        The time it took (ms, 2 decimals: the footer's ``replayMs``).
    """
    t = time.perf_counter()
    now = utcnow()
    payload = encode_record(
        replay_conditions(header, req),
        (recorded_item(i) for i in items),
    )
    table = ReplayRecord.__table__.c  # type: ignore[attr-defined]
    values = {
        "id": header.replay_id,
        "pack_id": header.pack_id,
        "workspace_id": principal.workspace_id,
        "principal_id": principal.id,
        "task_sha256": sha256_text(req.task),
        "conditions": {},
        "items": [],
        "payload": payload,
        "created_at": now,
        "expires_at": now + REPLAY_TTL,
    }
    # one statement: the record is written only if the workspace retains (no read first)
    retained = select(*(literal(v, type_=table[name].type) for name, v in values.items())).where(
        col(Workspace.id) == principal.workspace_id, col(Workspace.retaining).is_(True)
    )
    async with services.db.session() as s:
        await s.execute(insert(ReplayRecord).from_select(list(values), retained))
    return round((time.perf_counter() - t) * 1000, 2)
