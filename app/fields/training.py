"""The ranker of a collection and its training from editors' labels.

The ranker of a collection (:func:`ranker_for`): its trained models (``FieldState.model``,
trained from the editors' labels by :func:`train_from_labels`, which
:func:`app.fields.operations.train_fields` runs), else the shipped Kleister NDA model for a
field with the same name and type (``app/fields/kleister_nda_model.json``, trained on the
254 train NDAs), else the zero-shot scorer.

Labels: :func:`training_set` reads them as training rows, :func:`count_labels` counts them
per field, and :func:`candidate_keys` parses an editor's value with the field's finder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from cairn.app.core.models import DocumentVersion, FieldLabel, FieldState
from cairn.app.fields.finders import find_candidates
from cairn.app.fields.ranker import FieldModel, Ranker, doc_features, train_field
from cairn.app.fields.types import FieldSpec, FieldType

SEED_MODEL = Path(__file__).with_name("kleister_nda_model.json")


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


async def training_set(s: AsyncSession, collection_id: str) -> list[tuple[str, str, list[str]]]:
    """(version text, field, true keys) of every label of the collection."""
    rows = (
        await s.execute(
            select(col(DocumentVersion.text), col(FieldLabel.field_name), col(FieldLabel.keys))
            .join(FieldLabel, col(FieldLabel.version_id) == col(DocumentVersion.id))
            .where(col(FieldLabel.collection_id) == collection_id)
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
        select(col(FieldLabel.field_name), func.count())
        .where(col(FieldLabel.collection_id) == collection_id)
        .group_by(FieldLabel.field_name)
    )
    return {f: int(n) for f, n in rows.all()}


def candidate_keys(text: str, field_type: FieldType) -> dict[str, Any]:
    """key → normalised value of every candidate of ``field_type`` in ``text``."""
    return {c.key: c.value for c in find_candidates(text, field_type)}
