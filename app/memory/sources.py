"""Citations of agent memories: resolving them at write time and re-checking them on read.

A citation stores only ``(passage id, passage SHA-256, document id, collection id, the
document's latest version number then)`` (SPEC §7). On every recall and list each cited
source is re-checked against the live tables:

* passage, document or collection gone or deleted, the document's latest version expired
  (``valid_to`` ≤ now), another workspace, or unreadable for the caller (no
  ``document:read``, or outside a bound context set) → the memory is **hidden**;
* the passage's SHA-256 differs, or the document has a newer version than when the memory
  was written → ``CHANGED``; otherwise ``CURRENT``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.errors import BadInput
from cairn.app.core.ids import as_utc, utcnow
from cairn.app.core.models import Collection, Document, DocumentVersion, MemoryCitation, Passage
from cairn.app.governance import Principal
from cairn.app.memory.errors import ContextSetScopeRefused

CURRENT, CHANGED, HIDDEN = "CURRENT", "CHANGED", "HIDDEN"


def context_set_collections(principal: Principal) -> frozenset[str]:
    """Whole collections in the caller's bound context set (empty when the binding has no scope).

    Memories belong to a collection, so a bound credential remembers and recalls only in the
    collections its set covers whole; a set scoped by single documents allows none.
    """
    scope = principal.context_scope
    return scope.collection_ids if scope is not None else frozenset()


def check_context_set(principal: Principal, collection_id: str | None, field_name: str = "collectionId") -> None:
    """Refuse a collection outside the caller's bound context set.

    Raises:
        ContextSetScopeRefused: ``AGENT_CONTEXT_SET_SCOPE_REFUSED`` (403) for a bound credential and a
            collection (or no collection) outside its set.
    """
    if principal.context_set_id is None:
        return
    if collection_id is None or collection_id not in context_set_collections(principal):
        raise ContextSetScopeRefused(
            f"this credential is bound to context set {principal.context_set_id}; {field_name} must be one of "
            "its collections",
            field=field_name,
        )


@dataclass
class SourceCheck:
    """Re-check result of one memory: ``state`` (CURRENT / CHANGED / HIDDEN), per-citation
    states, and the live text of cited passages (for the entity leg; never returned)."""

    state: str = CURRENT
    citations: list[tuple[str, str, str]] = field(default_factory=list)
    passage_texts: list[str] = field(default_factory=list)


async def _latest_versions(s: AsyncSession, doc_ids: Sequence[str]) -> dict[str, tuple[int, datetime | None]]:
    if not doc_ids:
        return {}
    latest = (
        select(col(DocumentVersion.document_id), func.max(col(DocumentVersion.number)).label("n"))
        .where(col(DocumentVersion.document_id).in_(list(doc_ids)))
        .group_by(DocumentVersion.document_id)
        .subquery()
    )
    rows = await s.execute(
        select(col(DocumentVersion.document_id), col(DocumentVersion.number), col(DocumentVersion.valid_to)).join(
            latest, (latest.c.document_id == DocumentVersion.document_id) & (latest.c.n == DocumentVersion.number)
        )
    )
    return {r[0]: (int(r[1]), r[2]) for r in rows.all()}


async def resolve_citations(s: AsyncSession, principal: Principal, passage_ids: Sequence[str]) -> list[MemoryCitation]:
    """Citation rows (without ``memory_id``) for passages the caller can read now.

    Raises:
        BadInput: a passage that does not exist, is deleted, expired (its document's latest
            version has ``valid_to`` ≤ now) or is unreadable (``citations[i]``; one message
            for all, so ids cannot be probed).
        Forbidden: ``AGENT_CONTEXT_SET_SCOPE_REFUSED`` for a bound credential.
    """
    ids = list(dict.fromkeys(passage_ids))
    if not ids:
        return []
    rows = (
        await s.execute(
            select(
                col(Passage.id),
                col(Passage.sha256),
                col(Passage.document_id),
                col(Passage.collection_id),
                col(Passage.workspace_id),
                col(Document.deleted_at),
                col(Collection.deleted_at),
            )
            .join(Document, col(Document.id) == col(Passage.document_id))
            .join(Collection, col(Collection.id) == col(Passage.collection_id))
            .where(col(Passage.id).in_(ids))
        )
    ).all()
    found = {r[0]: r for r in rows}
    latest = await _latest_versions(s, list({r[2] for r in rows}))
    out = []
    readable = "document:read" in principal.permissions
    now = utcnow()
    for i, pid in enumerate(ids):
        r = found.get(pid)
        valid_to = latest.get(r[2], (0, None))[1] if r is not None else None
        if (
            r is None
            or r[4] != principal.workspace_id
            or r[5] is not None
            or r[6] is not None
            or not readable
            or (valid_to is not None and as_utc(valid_to) <= now)
        ):
            raise BadInput(
                f"citations[{i}]: passage {pid!r} not found, expired or not readable", field=f"citations[{i}]"
            )
        check_context_set(principal, r[3], f"citations[{i}]")
        out.append(
            MemoryCitation(
                memory_id="",
                passage_id=pid,
                passage_sha256=r[1],
                document_id=r[2],
                collection_id=r[3],
                document_version=latest.get(r[2], (0, None))[0],
            )
        )
    return out


async def check_sources(
    s: AsyncSession, principal: Principal, memory_ids: Sequence[str], now: datetime
) -> dict[str, SourceCheck]:
    """Re-check the cited sources of ``memory_ids`` (see module doc).

    Returns:
        Memory id → :class:`SourceCheck`; memories without citations are CURRENT.
    """
    out = {mid: SourceCheck() for mid in memory_ids}
    cites: list[MemoryCitation] = []
    ids = list(memory_ids)
    for i in range(0, len(ids), 500):
        cites += (
            (await s.execute(select(MemoryCitation).where(col(MemoryCitation.memory_id).in_(ids[i : i + 500]))))
            .scalars()
            .all()
        )
    if not cites:
        return out
    pids = list({c.passage_id for c in cites})
    prow = {}
    for i in range(0, len(pids), 500):
        for row in (
            await s.execute(
                select(
                    col(Passage.id),
                    col(Passage.sha256),
                    col(Passage.text),
                    col(Passage.workspace_id),
                    col(Document.deleted_at),
                    col(Collection.deleted_at),
                    col(Passage.collection_id),
                )
                .join(Document, col(Document.id) == col(Passage.document_id))
                .join(Collection, col(Collection.id) == col(Passage.collection_id))
                .where(col(Passage.id).in_(pids[i : i + 500]))
            )
        ).all():
            prow[row[0]] = row
    latest = await _latest_versions(s, list({c.document_id for c in cites}))
    readable = "document:read" in principal.permissions
    allowed = context_set_collections(principal) if principal.context_set_id else None
    for c in cites:
        check = out[c.memory_id]
        r = prow.get(c.passage_id)
        version, valid_to = latest.get(c.document_id, (0, None))
        gone = (
            r is None
            or r[3] != principal.workspace_id
            or r[4] is not None
            or r[5] is not None
            or (valid_to is not None and as_utc(valid_to) <= now)
            or not readable
            or (allowed is not None and r[6] not in allowed and not principal.may_read(r[6], c.document_id))
        )
        if gone or r is None:  # (r is None is part of gone; said again for the type checker)
            check.state = HIDDEN
            continue
        state = CHANGED if (r[1] != c.passage_sha256 or version > c.document_version) else CURRENT
        check.citations.append((c.passage_id, c.passage_sha256, state))
        check.passage_texts.append(r[2])
        if state == CHANGED and check.state == CURRENT:
            check.state = CHANGED
    return out
