"""Learned fields in the database: definitions, the per-collection ranker, extraction of
document versions, editor labels, and value reads with live citation checks.

Extraction (:func:`extract_collection`): every live document's current version whose
extraction is missing or older than the collection's ``revision`` (bumped when definitions
change or the ranker is retrained) is run through the ranker; its values replace the
version's previous ``MODEL`` rows. Each value is stored with its span in the version text,
the passage holding the span and that passage's SHA-256 (the citation); a field with no
value gets one row with ``value`` null and an ``uncited_reason``. New versions (ingest)
are extracted by the next :func:`extract_collection`, which ``cairn ingest`` and
``upsertDocument`` run.

The ranker of a collection: its trained models (``FieldState.model``, trained from the
editors' labels by :func:`train_collection`), else the shipped Kleister NDA model for a
field with the same name and type (``app/fields/kleister_nda_model.json``, trained on the
254 train NDAs), else the zero-shot scorer.

Reads (:func:`read_values`): per document, the version chosen by as-of (``knownAt``: the
version valid at the end of that day, as recorded now) and the values of the latest
extracted version not newer than it. A value is returned as fact only when its citation
checks out live: the cited passage is still in the chosen version with the same SHA-256,
and the finder, run on the cited span of that text, still gives the same value. Otherwise
it is returned with ``value`` null, ``stale`` true and the reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cairn.app.core.db import Database
from cairn.app.core.errors import NotFound
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import (
    Collection,
    Document,
    DocumentVersion,
    FieldDefinition,
    FieldExtraction,
    FieldLabel,
    FieldState,
    FieldValue,
    Passage,
    VersionPassage,
)
from cairn.app.corpus import VersionMeta, choose_versions
from cairn.app.fields.errors import FieldKnownAtInvalid
from cairn.app.fields.finders import find_candidates, verify_span
from cairn.app.fields.ranker import FieldModel, Ranker, doc_features, train_field
from cairn.app.fields.types import FieldSpec, FieldType, Multiplicity

SEED_MODEL = Path(__file__).with_name("kleister_nda_model.json")
NO_VALUE = "NO_CANDIDATE: no stated value scored above the field's threshold"


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
            select(FieldDefinition).where(FieldDefinition.collection_id == collection_id).order_by(FieldDefinition.name)
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


_SEED: dict[str, Any] | None = None


def seed_model() -> dict[str, Any]:
    """The shipped Kleister NDA ranker (``{field: model JSON, "_types": {field: type}}``), or {}."""
    global _SEED
    if _SEED is None:
        _SEED = json.loads(SEED_MODEL.read_text()) if SEED_MODEL.exists() else {}
    return _SEED


def ranker_for(st: FieldState, specs: Sequence[FieldSpec]) -> tuple[Ranker, dict[str, str]]:
    """The ranker of a collection and, per field, where its model comes from: ``LABELS``
    (trained on this collection's labels), ``SEED`` (shipped Kleister NDA model) or
    ``ZERO_SHOT``."""
    trained = Ranker.from_json({k: v for k, v in (st.model or {}).items() if not k.startswith("_")})
    seed = seed_model()
    seed_types = seed.get("_types", {})
    seeds = Ranker.from_json({k: v for k, v in seed.items() if not k.startswith("_")})
    out, origin = Ranker(), {}
    for spec in specs:
        if spec.name in trained.models and trained.models[spec.name].trained:
            out.models[spec.name], origin[spec.name] = trained.models[spec.name], "LABELS"
        elif spec.name in seeds.models and seed_types.get(spec.name) == spec.type.value:
            out.models[spec.name], origin[spec.name] = seeds.models[spec.name], "SEED"
        else:
            out.models[spec.name], origin[spec.name] = FieldModel(), "ZERO_SHOT"
    return out, origin


@dataclass
class ExtractReport:
    """One extraction run: versions extracted, values stored (non-null), null values, seconds."""

    documents: int = 0
    values: int = 0
    nulls: int = 0
    seconds: float = 0.0


async def _live_versions(s: AsyncSession, collection_id: str) -> list[VersionMeta]:
    rows = await s.execute(
        select(
            DocumentVersion.id,
            DocumentVersion.document_id,
            DocumentVersion.number,
            DocumentVersion.valid_from,
            DocumentVersion.valid_to,
            DocumentVersion.recorded_at,
        )
        .join(Document, Document.id == DocumentVersion.document_id)
        .where(Document.collection_id == collection_id, Document.deleted_at.is_(None))
    )
    return [VersionMeta(*r) for r in rows]


def _passage_of(spans: list[tuple[str, int, int, str]], start: int, end: int) -> tuple[str, str] | None:
    for pid, ps, pe, sha in spans:
        if ps <= start and end <= pe:
            return pid, sha
    return None


async def extract_version(
    s: AsyncSession, version: DocumentVersion, collection_id: str, specs: Sequence[FieldSpec], ranker: Ranker
) -> tuple[int, int]:
    """Extract one version's fields and store them (replacing its MODEL rows). Returns
    (values, nulls)."""
    spans = [
        (pid, ps, pe, sha)
        for pid, ps, pe, sha in (
            await s.execute(
                select(VersionPassage.passage_id, VersionPassage.start, VersionPassage.end, Passage.sha256)
                .join(Passage, Passage.id == VersionPassage.passage_id)
                .where(VersionPassage.version_id == version.id)
                .order_by(VersionPassage.start)
            )
        ).all()
    ]
    await s.execute(delete(FieldValue).where(FieldValue.version_id == version.id, FieldValue.source == "MODEL"))
    now = utcnow()
    extracted = ranker.extract(version.text, specs)
    n_values = n_nulls = 0
    for spec in specs:
        chosen = extracted.get(spec.name, [])
        rows = []
        for e in chosen:
            cited = None
            for start, end in e.spans:  # the best span a passage holds whole
                hit = _passage_of(spans, start, end)
                if hit:
                    cited = (start, end, *hit)
                    break
            if cited is None:
                continue
            rows.append((e, cited))
        if not rows:
            reason = NO_VALUE if not chosen else "UNCITABLE: the value's span crosses a passage boundary"
            s.add(
                FieldValue(
                    id=new_id("fv"),
                    workspace_id=version.workspace_id,
                    collection_id=collection_id,
                    document_id=version.document_id,
                    version_id=version.id,
                    field_name=spec.name,
                    uncited_reason=reason,
                    recorded_at=now,
                )
            )
            n_nulls += 1
            continue
        for ordinal, (e, (start, end, pid, sha)) in enumerate(rows):
            s.add(
                FieldValue(
                    id=new_id("fv"),
                    workspace_id=version.workspace_id,
                    collection_id=collection_id,
                    document_id=version.document_id,
                    version_id=version.id,
                    field_name=spec.name,
                    ordinal=ordinal,
                    value=e.value,
                    key=e.key,
                    score=round(e.score, 4),
                    passage_id=pid,
                    start=start,
                    end=end,
                    sha256=sha,
                    recorded_at=now,
                )
            )
            n_values += 1
    return n_values, n_nulls


async def extract_collection(
    db: Database,
    *,
    workspace_id: str,
    collection_id: str,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ExtractReport:
    """Extract every live document's current version that is not extracted at the
    collection's revision (``force``: all of them). ``progress(done, total)`` after each
    document. A collection without field definitions extracts nothing."""
    report = ExtractReport()
    started = time.perf_counter()
    async with db.session() as s:
        await get_collection_row(s, workspace_id, collection_id)
        specs = [spec_of(r) for r in await definitions(s, collection_id)]
        if not specs:
            return report
        st = await state(s, workspace_id, collection_id)
        revision = st.revision
        ranker, _ = ranker_for(st, specs)
        now = utcnow()
        current = choose_versions(await _live_versions(s, collection_id), valid_time=now, system_time=now, now=now)
        done = dict(
            (
                await s.execute(
                    select(FieldExtraction.version_id, FieldExtraction.revision).where(
                        FieldExtraction.collection_id == collection_id
                    )
                )
            ).all()
        )
    todo = sorted(v.id for v in current.values() if force or done.get(v.id) != revision)
    for i, vid in enumerate(todo, start=1):
        async with db.session() as s:
            version = await s.get(DocumentVersion, vid)
            if version is None:
                continue
            values, nulls = await extract_version(s, version, collection_id, specs, ranker)
            mark = await s.get(FieldExtraction, vid)
            if mark is None:
                s.add(FieldExtraction(version_id=vid, collection_id=collection_id, revision=revision, extracted_at=now))
            else:
                mark.revision, mark.extracted_at = revision, now
        report.documents += 1
        report.values += values
        report.nulls += nulls
        if progress:
            progress(i, len(todo))
    report.seconds = round(time.perf_counter() - started, 2)
    return report


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
    versions = await _live_versions(s, collection_id)
    chosen = choose_versions(versions, valid_time=known_at or now, system_time=now, now=now)
    if not chosen:
        return []
    numbers = {v.id: (v.document_id, v.number) for v in versions}
    extracted = {
        vid
        for (vid,) in (
            await s.execute(select(FieldExtraction.version_id).where(FieldExtraction.collection_id == collection_id))
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
                    VersionPassage.version_id, VersionPassage.passage_id, VersionPassage.start, VersionPassage.end
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
            where = placed.get((doc.version_id, r.passage_id))
            old = placed.get((r.version_id, r.passage_id))
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
            select(VersionPassage.passage_id, VersionPassage.start, VersionPassage.end, Passage.sha256)
            .join(Passage, Passage.id == VersionPassage.passage_id)
            .where(VersionPassage.version_id == version.id)
        )
    ).all()
    for c in find_candidates(version.text, field_type):
        if c.key != v.key:
            continue
        hit = _passage_of([tuple(r) for r in spans], c.start, c.end)  # type: ignore[misc]
        if hit:
            v.value, v.start, v.end, (v.passage_id, v.sha256) = c.value, c.start, c.end, hit
            v.uncited_reason = None
            return


async def _start_in(s: AsyncSession, version_id: str, passage_id: str | None) -> int | None:
    row = (
        await s.execute(
            select(VersionPassage.start).where(
                VersionPassage.version_id == version_id, VersionPassage.passage_id == passage_id
            )
        )
    ).first()
    return None if row is None else int(row[0])


async def coverage(
    s: AsyncSession, *, workspace_id: str, collection_id: str, specs: Sequence[FieldSpec], known_at=None
) -> tuple[int, dict[str, int]]:
    """(live documents, field → documents with at least one cited value)."""
    docs = await read_values(s, workspace_id=workspace_id, collection_id=collection_id, specs=specs, known_at=known_at)
    have = {sp.name: 0 for sp in specs}
    for d in docs:
        for name, vals in d.values.items():
            if any(v.value is not None for v in vals):
                have[name] += 1
    return len(docs), have


async def training_set(s: AsyncSession, collection_id: str) -> list[tuple[str, str, list[str]]]:
    """(version text, field, true keys) of every label of the collection."""
    rows = (
        await s.execute(
            select(DocumentVersion.text, FieldLabel.field_name, FieldLabel.keys)
            .join(FieldLabel, FieldLabel.version_id == DocumentVersion.id)
            .where(FieldLabel.collection_id == collection_id)
            .order_by(FieldLabel.version_id, FieldLabel.field_name)
        )
    ).all()
    return [(t, f, list(k)) for t, f, k in rows]


def train_from_labels(specs: Sequence[FieldSpec], labelled: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
    """Ranker JSON trained on labels: per field with labels on at least 2 documents and one
    positive candidate; fields without enough labels keep their current source."""
    ranker = Ranker()
    for spec in specs:
        rows = [(t, set(k)) for t, f, k in labelled if f == spec.name]
        if len(rows) < 2:
            continue
        docs = [doc_features(t, spec) for t, _ in rows]
        model = train_field(spec, docs, [g for _, g in rows])
        if model.trained:
            ranker.models[spec.name] = model
    return ranker.to_json()


async def count_labels(s: AsyncSession, collection_id: str) -> dict[str, int]:
    """field → labelled documents."""
    rows = await s.execute(
        select(FieldLabel.field_name, func.count())
        .where(FieldLabel.collection_id == collection_id)
        .group_by(FieldLabel.field_name)
    )
    return {f: int(n) for f, n in rows.all()}


def candidate_keys(text: str, field_type: FieldType) -> dict[str, Any]:
    """key → normalised value of every candidate of ``field_type`` in ``text``."""
    return {c.key: c.value for c in find_candidates(text, field_type)}
