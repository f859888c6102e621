"""Learned fields in the database: definitions, the collection's field state, and the reads
that extraction (:mod:`app.fields.extraction`) and value reads (:mod:`app.fields.values`)
share.

A definition row becomes a :class:`FieldSpec` (:func:`spec_of`); a collection's
:class:`FieldState` (made on first use: :func:`state`) holds its extraction ``revision`` and
its trained ranker (:mod:`app.fields.training`). :func:`live_versions` lists the versions of
the collection's live documents for the as-of rule (:func:`app.corpus.choose_versions`);
:func:`passage_of` names the passage that holds a span whole (the citation).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.errors import NotFound
from cairn.app.core.models import Collection, Document, DocumentVersion, FieldDefinition, FieldState
from cairn.app.corpus import VersionMeta
from cairn.app.fields.types import FieldSpec, FieldType, Multiplicity


def spec_of(row: FieldDefinition) -> FieldSpec:
    """A definition row as a :class:`FieldSpec`."""
    return FieldSpec(
        row.name, FieldType(row.type), row.description, Multiplicity(row.multiplicity), tuple(row.examples or ())
    )


async def get_collection_row(s: AsyncSession, workspace_id: str, collection_id: str) -> Collection:
    """The live collection, or NotFound naming it."""
    coll = await s.get(Collection, collection_id)
    if coll is None or coll.workspace_id != workspace_id or coll.deleted_at is not None:
        raise NotFound(f"collection {collection_id!r} not found", field="collectionId")
    return coll


async def definitions(s: AsyncSession, collection_id: str) -> list[FieldDefinition]:
    """The collection's field definitions, by name."""
    rows = (
        await s.execute(
            select(FieldDefinition)
            .where(col(FieldDefinition.collection_id) == collection_id)
            .order_by(col(FieldDefinition.name))
        )
    ).scalars()
    return list(rows)


async def state(s: AsyncSession, workspace_id: str, collection_id: str) -> FieldState:
    """The collection's :class:`FieldState` (made on first use)."""
    st = await s.get(FieldState, collection_id)
    if st is None:
        st = FieldState(collection_id=collection_id, workspace_id=workspace_id, revision=1, model={})
        s.add(st)
        await s.flush()
    return st


async def live_versions(s: AsyncSession, collection_id: str) -> list[VersionMeta]:
    """Every version of the collection's live documents (for the as-of rule)."""
    rows = await s.execute(
        select(
            col(DocumentVersion.id),
            col(DocumentVersion.document_id),
            col(DocumentVersion.number),
            col(DocumentVersion.valid_from),
            col(DocumentVersion.valid_to),
            col(DocumentVersion.recorded_at),
        )
        .join(Document, col(Document.id) == col(DocumentVersion.document_id))
        .where(col(Document.collection_id) == collection_id, col(Document.deleted_at).is_(None))
    )
    return [VersionMeta(*r) for r in rows]


def passage_of(spans: list[tuple[str, int, int, str]], start: int, end: int) -> tuple[str, str] | None:
    """(passage id, SHA-256) of the first of ``spans`` (passage id, start, end, SHA-256) that
    holds ``start``–``end`` whole, or None."""
    for pid, ps, pe, sha in spans:
        if ps <= start and end <= pe:
            return pid, sha
    return None
