"""Context sets: the scope checks every write makes.

Scope collections/documents exist, live, in the workspace; required evidence and answer
citations name live documents (and passages of them) in the workspace, required evidence and
citations inside the set's scope (a bound credential must be able to read what the set
requires and cites).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.contextsets.types import ContextSetView, ContextSetWrite
from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.models import Collection, Document, Passage


async def _live_docs(s: AsyncSession, workspace_id: str, ids: list[str]) -> dict[str, str]:
    """Live documents (not deleted, collection live) of the workspace among ``ids``: id → collection id."""
    if not ids:
        return {}
    rows = await s.execute(
        select(col(Document.id), col(Document.collection_id))
        .join(Collection, col(Collection.id) == col(Document.collection_id))
        .where(
            col(Document.id).in_(ids),
            col(Document.workspace_id) == workspace_id,
            col(Document.deleted_at).is_(None),
            col(Collection.deleted_at).is_(None),
        )
    )
    return {r[0]: r[1] for r in rows.all()}


async def _passages(s: AsyncSession, workspace_id: str, ids: list[str]) -> dict[str, str]:
    """Passages of the workspace among ``ids``: id → document id."""
    if not ids:
        return {}
    rows = await s.execute(
        select(col(Passage.id), col(Passage.document_id)).where(
            col(Passage.id).in_(ids), col(Passage.workspace_id) == workspace_id
        )
    )
    return {r[0]: r[1] for r in rows.all()}


async def check_refs(s: AsyncSession, workspace_id: str, w: ContextSetWrite, current: ContextSetView | None) -> None:
    """Scope ids, answer citations and required evidence exist, are live and readable (module doc).

    Raises:
        NotFound / BadInput: naming the field.
    """
    colls = list(w.collection_ids) if w.collection_ids is not None else list(current.collection_ids if current else ())
    docs = list(w.document_ids) if w.document_ids is not None else list(current.document_ids if current else ())
    if w.collection_ids:
        found = set(
            (
                await s.execute(
                    select(col(Collection.id)).where(
                        col(Collection.id).in_(colls),
                        col(Collection.workspace_id) == workspace_id,
                        col(Collection.deleted_at).is_(None),
                    )
                )
            ).scalars()
        )
        for i, c in enumerate(colls):
            if c not in found:
                raise NotFound(
                    f"input.scope.collectionIds[{i}]: no collection {c!r} in this workspace",
                    field=f"input.scope.collectionIds[{i}]",
                )
    if w.document_ids:
        live = await _live_docs(s, workspace_id, docs)
        for i, d in enumerate(docs):
            if d not in live:
                raise NotFound(
                    f"input.scope.documentIds[{i}]: no live document {d!r} in this workspace",
                    field=f"input.scope.documentIds[{i}]",
                )
    refs: list[tuple[str, str, str | None, bool]] = []  # (field, document, passage, must be in scope)
    for i, va in enumerate(w.verified_answers or ()):
        if va.document_id is not None:
            refs.append((f"input.verifiedAnswers[{i}].citation", va.document_id, va.passage_id, True))
    required = w.required_evidence
    if required is None and current is not None and (w.collection_ids is not None or w.document_ids is not None):
        from cairn.app.contextsets.types import EvidenceRef

        required = tuple(EvidenceRef(e.document_id or "", e.passage_id) for e in current.of("REQUIRED_EVIDENCE"))
    for i, r in enumerate(required or ()):
        refs.append((f"input.requiredEvidence[{i}]", r.document_id, r.passage_id, True))
    if not refs:
        return
    live = await _live_docs(s, workspace_id, sorted({r[1] for r in refs}))
    pmap = await _passages(s, workspace_id, sorted({r[2] for r in refs if r[2]}))
    for field, doc, passage, in_scope in refs:
        if doc not in live:
            raise NotFound(
                f"{field}.documentId: no live, readable document {doc!r} in this workspace", field=f"{field}.documentId"
            )
        if passage is not None and pmap.get(passage) != doc:
            raise NotFound(
                f"{field}.passageId: passage {passage!r} is not a passage of document {doc!r}",
                field=f"{field}.passageId",
            )
        if in_scope and live[doc] not in colls and doc not in docs:
            raise BadInput(
                f"{field}.documentId: document {doc!r} is outside the set's scope (add its collection or the "
                "document to scope): a credential bound to the set could not read it",
                field=f"{field}.documentId",
            )
