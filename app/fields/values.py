"""Reads of learned-field values as of a date, each citation re-checked live.

Reads (:func:`read_values`): per document, the version chosen by as-of (``knownAt``: the
version valid at the end of that day, as recorded now: :func:`known_at_time`) and the values
of the latest extracted version not newer than it. A value is returned as fact only when its
citation checks out live: the cited passage is still in the chosen version with the same
SHA-256, and the finder, run on the cited span of that text, still gives the same value.
Otherwise it is returned with ``value`` null, ``stale`` true and the reason. An editor's label
of the chosen version wins over the model's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.ids import utcnow
from cairn.app.core.models import (
    Document,
    DocumentVersion,
    FieldExtraction,
    FieldLabel,
    FieldValue,
    Passage,
    VersionPassage,
)
from cairn.app.corpus import choose_versions
from cairn.app.fields.errors import FieldKnownAtInvalid
from cairn.app.fields.finders import find_candidates, verify_span
from cairn.app.fields.store import live_versions, passage_of
from cairn.app.fields.types import FieldSpec, FieldType


def known_at_time(known_at: str | None) -> datetime | None:
    """``YYYY-MM-DD`` → the last microsecond of that UTC day (None → None).

    Raises:
        BadInput: not a ``YYYY-MM-DD`` date (code ``FIELD_KNOWN_AT_INVALID``).
    """
    if known_at is None:
        return None
    try:
        day = datetime.strptime(known_at, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise FieldKnownAtInvalid(f"knownAt: {known_at!r} is not a date YYYY-MM-DD", field="knownAt") from None
    if known_at != day.strftime("%Y-%m-%d"):
        raise FieldKnownAtInvalid(f"knownAt: {known_at!r} is not a date YYYY-MM-DD", field="knownAt")
    return day + timedelta(days=1) - timedelta(microseconds=1)


@dataclass
class ValueView:
    """A value as returned: normalised ``value`` (None when null or stale), its key, score, the
    citation (document, version, passage, span in the version text, passage SHA-256),
    ``uncited_reason`` when null, ``stale`` when the citation no longer checks out."""

    field: str
    value: Any
    key: str | None
    score: float
    document_id: str
    version_id: str
    passage_id: str | None = None
    start: int | None = None
    end: int | None = None
    sha256: str | None = None
    uncited_reason: str | None = None
    stale: bool = False
    source: str = "MODEL"


@dataclass
class DocValues:
    """One document's values (field → values, best first) at the chosen version."""

    document_id: str
    external_id: str
    title: str
    version_id: str
    version_number: int
    values: dict[str, list[ValueView]] = field(default_factory=dict)


async def read_values(
    s: AsyncSession,
    *,
    workspace_id: str,
    collection_id: str,
    specs: Sequence[FieldSpec],
    known_at: datetime | None = None,
) -> list[DocValues]:
    """Every live document's values at the version chosen by as-of (module doc), with each
    citation re-checked against the chosen version's text. Documents in external-id order."""
    now = utcnow()
    versions = await live_versions(s, collection_id)
    chosen = choose_versions(versions, valid_time=known_at or now, system_time=now, now=now)
    if not chosen:
        return []
    numbers = {v.id: (v.document_id, v.number) for v in versions}
    extracted = {
        vid
        for (vid,) in (
            await s.execute(
                select(col(FieldExtraction.version_id)).where(col(FieldExtraction.collection_id) == collection_id)
            )
        ).all()
    }
    # per document: the latest extracted version not newer than the chosen one
    source_version: dict[str, str] = {}
    for vid in extracted:
        doc_id, number = numbers.get(vid, (None, 0))
        if doc_id in chosen and number <= chosen[doc_id].number:
            prev = source_version.get(doc_id)
            if prev is None or numbers[prev][1] < number:
                source_version[doc_id] = vid
    docs = {
        d.id: d
        for d in (await s.execute(select(Document).where(Document.id.in_(list(chosen))))).scalars()  # type: ignore[attr-defined]
    }
    rows = (
        (await s.execute(select(FieldValue).where(FieldValue.version_id.in_(list(source_version.values())))))  # type: ignore[attr-defined]
        .scalars()
        .all()
    )
    labels = (
        (
            await s.execute(
                select(FieldLabel).where(FieldLabel.version_id.in_([c.id for c in chosen.values()]))  # type: ignore[attr-defined]
            )
        )
        .scalars()
        .all()
    )
    chosen_ids = [c.id for c in chosen.values()]
    placed = {
        (vid, pid): (ps, pe)
        for vid, pid, ps, pe in (
            await s.execute(
                select(
                    col(VersionPassage.version_id),
                    col(VersionPassage.passage_id),
                    col(VersionPassage.start),
                    col(VersionPassage.end),
                ).where(
                    VersionPassage.version_id.in_(chosen_ids)  # type: ignore[attr-defined]
                )
            )
        ).all()
    }
    cited_ids = {r.passage_id for r in rows if r.passage_id}
    passages = {
        p.id: p
        for p in (await s.execute(select(Passage).where(Passage.id.in_(list(cited_ids))))).scalars()  # type: ignore[attr-defined]
    }
    types = {sp.name: sp.type for sp in specs}
    out: dict[str, DocValues] = {}
    for doc_id, view in chosen.items():
        d = docs[doc_id]
        out[doc_id] = DocValues(doc_id, d.external_id, d.title, view.id, view.number)
    for r in sorted(rows, key=lambda r: (r.document_id, r.field_name, r.ordinal)):
        if r.field_name not in types:
            continue
        doc = out[r.document_id]
        v = ValueView(r.field_name, r.value, r.key, r.score, r.document_id, doc.version_id, source=r.source)
        if r.value is None:
            v.uncited_reason = r.uncited_reason
        else:
            v.passage_id, v.sha256 = r.passage_id, r.sha256
            where = placed.get((doc.version_id, r.passage_id or ""))
            old = placed.get((r.version_id, r.passage_id or ""))
            p = passages.get(r.passage_id or "")
            ok = False
            if (
                where is not None
                and p is not None
                and p.sha256 == r.sha256
                and r.start is not None
                and r.end is not None
            ):
                # the span's offset inside the passage, then into the chosen version
                base = old[0] if old is not None else None
                if base is None:
                    base = await _start_in(s, r.version_id, r.passage_id)
                if base is not None:
                    rel_s, rel_e = r.start - base, r.end - base
                    ok = verify_span(p.text, rel_s, rel_e, types[r.field_name], r.key or "")
                    v.start, v.end = where[0] + rel_s, where[0] + rel_e
            if not ok:
                v.value, v.stale, v.start, v.end = None, True, None, None
                v.uncited_reason = (
                    f"STALE: the cited text (passage {r.passage_id}) is no longer in version {doc.version_number} "
                    "as extracted; re-run extraction"
                )
        doc.values.setdefault(r.field_name, []).append(v)
    for lab in labels:  # an editor's label of the chosen version wins over the model
        if lab.field_name in types and lab.document_id in out:
            vals = _label_values(lab, out[lab.document_id], types)
            for v in vals:
                if v.value is None and v.key is not None:  # the model never proposed it: cite where the text states it
                    await _cite_label(s, v, types[lab.field_name])
            out[lab.document_id].values[lab.field_name] = vals
    return sorted(out.values(), key=lambda d: (d.external_id, d.document_id))


def _label_values(lab: FieldLabel, doc: DocValues, types: dict[str, FieldType]) -> list[ValueView]:
    model = {v.key: v for v in doc.values.get(lab.field_name, []) if v.value is not None}
    out = []
    for key in lab.keys:
        m = model.get(key)
        if m is not None:
            out.append(ValueView(**{**m.__dict__, "score": 1.0, "source": "LABEL"}))
        else:
            out.append(
                ValueView(
                    lab.field_name,
                    None,
                    key,
                    1.0,
                    doc.document_id,
                    doc.version_id,
                    uncited_reason="LABEL_UNCITED: set by an editor; no span of the text states it",
                    source="LABEL",
                )
            )
    if not out:
        out.append(
            ValueView(
                lab.field_name,
                None,
                None,
                1.0,
                doc.document_id,
                doc.version_id,
                uncited_reason="LABELLED_NONE: an editor confirmed the document has no value",
                source="LABEL",
            )
        )
    return out


async def _cite_label(s: AsyncSession, v: ValueView, field_type: FieldType) -> None:
    """Give a labelled value the first span of its version that states it whole inside one
    passage (value, citation), or leave it null with ``LABEL_UNCITED``."""
    version = await s.get(DocumentVersion, v.version_id)
    if version is None:
        return
    spans = (
        await s.execute(
            select(
                col(VersionPassage.passage_id), col(VersionPassage.start), col(VersionPassage.end), col(Passage.sha256)
            )
            .join(Passage, col(Passage.id) == col(VersionPassage.passage_id))
            .where(col(VersionPassage.version_id) == version.id)
        )
    ).all()
    for c in find_candidates(version.text, field_type):
        if c.key != v.key:
            continue
        hit = passage_of([tuple(r) for r in spans], c.start, c.end)  # type: ignore[misc]
        if hit:
            v.value, v.start, v.end, (v.passage_id, v.sha256) = c.value, c.start, c.end, hit
            v.uncited_reason = None
            return


async def _start_in(s: AsyncSession, version_id: str, passage_id: str | None) -> int | None:
    row = (
        await s.execute(
            select(col(VersionPassage.start)).where(
                col(VersionPassage.version_id) == version_id, col(VersionPassage.passage_id) == passage_id
            )
        )
    ).first()
    return None if row is None else int(row[0])


async def coverage(
    s: AsyncSession,
    *,
    workspace_id: str,
    collection_id: str,
    specs: Sequence[FieldSpec],
    known_at: datetime | None = None,
) -> tuple[int, dict[str, int]]:
    """(live documents, field → documents with at least one cited value)."""
    docs = await read_values(s, workspace_id=workspace_id, collection_id=collection_id, specs=specs, known_at=known_at)
    have = {sp.name: 0 for sp in specs}
    for d in docs:
        for name, vals in d.values.items():
            if any(v.value is not None for v in vals):
                have[name] += 1
    return len(docs), have
