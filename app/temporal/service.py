"""The temporal index: statements extracted per version, read per document as of a point
(:func:`visible_facts`, used by :mod:`app.temporal.operations` and the packs' GRAPH leg).

Indexing is lazy and complete (``cairn reindex`` rebuilds it: :func:`rebuild_index`): before any read, every version of the workspace not yet in
``temporal_indexed_version`` is extracted (:mod:`app.temporal.extract`) into
``temporal_statement`` (ids, span, hash, interval; the statement text is the version's
text at that span). Reads then take, per document, the version visible at
``(asOf.validTime, asOf.systemTime)`` (:func:`app.corpus.visible_versions`), and only that
version's statements.

Invalidation (read time, so it is bitemporal for free): among statements of one subject
and one role (``relation``), an open-ended statement ends where the next statement giving
the role to *another* holder starts (``ended_by`` names it). Statements without a role
never end, and never are ended by, anything; subjects never share statements.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy import delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.db import Database
from cairn.app.core.ids import as_utc, sha256_text, stable_id
from cairn.app.core.models import (
    Collection,
    Document,
    DocumentVersion,
    TemporalIndexedVersion,
    TemporalStatement,
    VersionPassage,
)
from cairn.app.corpus import visible_versions
from cairn.app.governance import DatabasePort, Principal
from cairn.app.temporal.extract import extract, subject_base, subject_key

FAR_PAST = datetime(1, 1, 2, tzinfo=UTC)
FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
"""Stand-ins for an open interval end when ordering and comparing intervals."""


@dataclass(frozen=True)
class Fact:
    """A statement as read: citation, interval (after invalidation), role and holder."""

    id: str
    subject: str
    relation: str
    holder: str
    text: str
    document_id: str
    version_id: str
    passage_id: str | None
    start: int
    end: int
    sha256: str
    valid_from: datetime | None
    valid_to: datetime | None
    precision: str
    time_source: str
    ended_by: str | None = None
    subject_base: str = ""
    external_id: str = ""
    document_title: str = ""
    collection_id: str = ""
    collection_name: str = ""


_LOCKS: dict[tuple[int, str], asyncio.Lock] = {}


async def index_workspace(services: DatabasePort, workspace_id: str) -> None:
    """:func:`ensure_indexed` in its own transaction, once at a time per workspace in this
    process; another worker that indexed the same versions first wins (its rows stand, the
    duplicate batch is dropped and the rest retried)."""
    lock = _LOCKS.setdefault((id(services.db), workspace_id), asyncio.Lock())
    async with lock:
        for _ in range(3):
            try:
                async with services.db.session() as s:
                    await ensure_indexed(s, workspace_id)
                return
            except IntegrityError:
                continue


async def ensure_indexed(s: AsyncSession, workspace_id: str) -> int:
    """Extract statements of every version of the workspace not indexed yet; returns how many versions."""
    done = 0
    while n := await _index_batch(s, workspace_id):
        done += n
    return done


async def rebuild_index(db: Database, *, progress: Callable[[str, int, int], None] | None = None) -> int:
    """Drop the temporal index of every workspace and extract it again from SQL (``cairn reindex``).

    Deletes every ``temporal_statement`` and ``temporal_indexed_version`` row, then indexes all
    versions, :data:`BATCH` per transaction, workspace by workspace; reads in between see a
    partial index (the lazy indexing of :func:`index_workspace` completes it on the next read).

    Args:
        db: :class:`app.core.db.Database`.
        progress: Called ``progress("temporal", versions done, versions in total)`` after each batch.

    Returns:
        The number of document versions indexed.
    """
    async with db.session() as s:
        await s.execute(delete(TemporalStatement))
        await s.execute(delete(TemporalIndexedVersion))
        counts = (
            await s.execute(
                select(col(DocumentVersion.workspace_id), func.count())
                .group_by(DocumentVersion.workspace_id)
                .order_by(DocumentVersion.workspace_id)
            )
        ).all()
    total = sum(int(n) for _, n in counts)
    done = 0
    if progress is not None:
        progress("temporal", 0, total)
    for workspace_id, _ in counts:
        while True:
            async with db.session() as s:
                n = await _index_batch(s, workspace_id)
            if not n:
                break
            done += n
            if progress is not None:
                progress("temporal", done, total)
    return done


BATCH = 200
"""Versions extracted per query (and per transaction in :func:`rebuild_index`)."""


async def _index_batch(s: AsyncSession, workspace_id: str) -> int:
    """Extract statements of up to :data:`BATCH` versions of the workspace not indexed yet
    (flushed in ``s``); returns how many versions (0: the workspace is fully indexed)."""
    done = 0
    rows = (
        await s.execute(
            select(
                col(DocumentVersion.id),
                col(DocumentVersion.document_id),
                col(DocumentVersion.text),
                col(DocumentVersion.valid_from),
                col(DocumentVersion.valid_to),
                col(Document.title),
                col(Document.external_id),
            )
            .join(Document, col(Document.id) == col(DocumentVersion.document_id))
            .outerjoin(TemporalIndexedVersion, col(TemporalIndexedVersion.version_id) == col(DocumentVersion.id))
            .where(col(DocumentVersion.workspace_id) == workspace_id, col(TemporalIndexedVersion.version_id).is_(None))
            .order_by(DocumentVersion.id)
            .limit(BATCH)
        )
    ).all()
    if not rows:
        return 0
    spans: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for vid, pid, a, b in (
        await s.execute(
            select(
                col(VersionPassage.version_id),
                col(VersionPassage.passage_id),
                col(VersionPassage.start),
                col(VersionPassage.end),
            ).where(col(VersionPassage.version_id).in_([r[0] for r in rows]))
        )
    ).all():
        spans[vid].append((a, b, pid))
    for vid, doc_id, text, vf, vt, title, ext in rows:
        subject = title or ext
        found = extract(text, subject, as_utc(vf) if vf else None, as_utc(vt) if vt else None)
        for k, st in enumerate(found):
            host = next((p for a, b, p in spans.get(vid, ()) if a <= st.start < b), None)
            s.add(
                TemporalStatement(
                    id=stable_id("stm", vid, st.start, k),
                    workspace_id=workspace_id,
                    document_id=doc_id,
                    version_id=vid,
                    passage_id=host,
                    subject=subject,
                    subject_key=subject_key(subject),
                    subject_base=subject_base(subject),
                    relation=st.relation,
                    holder=st.holder[:200],
                    text=st.text,
                    start=st.start,
                    end=st.end,
                    sha256=sha256_text(st.text),
                    valid_from=st.interval.valid_from,
                    valid_to=st.interval.valid_to,
                    precision=st.interval.precision,
                    time_source=st.time_source,
                )
            )
        s.add(TemporalIndexedVersion(version_id=vid, workspace_id=workspace_id, statements=len(found)))
        done += 1
    await s.flush()
    return done


def _fact(r: TemporalStatement, source: tuple[str, str, str, str] = ("", "", "", "")) -> Fact:
    """A stored statement as a :class:`Fact`; ``source`` = (external id, document title,
    collection id, collection name) so its citation names its source."""
    return Fact(
        r.id,
        r.subject,
        r.relation,
        r.holder,
        r.text,
        r.document_id,
        r.version_id,
        r.passage_id,
        r.start,
        r.end,
        r.sha256,
        as_utc(r.valid_from) if r.valid_from else None,
        as_utc(r.valid_to) if r.valid_to else None,
        r.precision,
        r.time_source,
        None,
        r.subject_base,
        *source,
    )


def invalidate(facts: list[Fact]) -> list[Fact]:
    """End open role statements at the start of the next one for another holder (module doc)."""
    by_role: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for f in facts:
        if f.relation:
            by_role[(subject_key(f.subject), f.relation)].append(f)
    ended: dict[str, Fact] = {}
    for group in by_role.values():
        group.sort(key=lambda f: (f.valid_from or FAR_PAST, f.document_id, f.start, f.id))
        for i, f in enumerate(group):
            if f.valid_to is not None or f.valid_from is None:
                continue
            nxt = next(
                (
                    g
                    for g in group[i + 1 :]
                    if g.valid_from is not None and g.valid_from > f.valid_from and g.holder != f.holder
                ),
                None,
            )
            if nxt is not None:
                ended[f.id] = replace(f, valid_to=nxt.valid_from, ended_by=nxt.id)
    return [ended.get(f.id, f) for f in facts]


async def visible_facts(
    services: DatabasePort,
    principal: Principal,
    *,
    subject_keys: list[str] | None,
    document_ids: list[str] | None,
    valid_time: datetime,
    system_time: datetime,
    collection_ids: list[str] | None = None,
    subject_bases: list[str] | None = None,
) -> list[Fact]:
    """Statements of the given subjects (by key or base) or documents, from each document's
    as-of version, invalidated."""
    await index_workspace(services, principal.workspace_id)
    async with services.db.session() as s:
        conds = []
        if subject_keys:
            conds.append(col(TemporalStatement.subject_key).in_(subject_keys))
        if subject_bases:
            conds.append(col(TemporalStatement.subject_base).in_(subject_bases))
        if document_ids:
            conds.append(col(TemporalStatement.document_id).in_(document_ids))
        if not conds:
            return []
        q = (
            select(
                TemporalStatement,
                col(Document.collection_id),
                col(Document.external_id),
                col(Document.title),
                col(Collection.name),
            )
            .join(Document, col(Document.id) == col(TemporalStatement.document_id))
            .join(Collection, col(Collection.id) == col(Document.collection_id))
        )
        q = q.where(col(TemporalStatement.workspace_id) == principal.workspace_id, or_(*conds))
        if collection_ids:
            q = q.where(col(Document.collection_id).in_(collection_ids))
        # a credential bound to a context set reads only statements of documents in its scope
        rows = [r for r in (await s.execute(q)).all() if principal.may_read(r[1], r[0].document_id)]
        docs = sorted({r[0].document_id for r in rows})
        views = await visible_versions(
            s, workspace_id=principal.workspace_id, document_ids=docs, valid_time=valid_time, system_time=system_time
        )
    if "document:read" not in principal.permissions:
        return []
    facts = [
        _fact(r[0], (r[2], r[3], r[1], r[4]))
        for r in rows
        if (v := views.get(r[0].document_id)) is not None and v.id == r[0].version_id
    ]
    return invalidate(facts)
