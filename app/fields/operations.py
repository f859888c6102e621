"""Learned-field services: each takes ``(services, principal, request)``, opens and commits
its own session and returns domain objects (rules in :mod:`app.fields.store`,
:mod:`app.fields.extraction`, :mod:`app.fields.values`, :mod:`app.fields.training`,
:mod:`app.fields.plan`, :mod:`app.fields.operands` and :mod:`app.fields.execution`).

Limits: ≤ 50 fields per collection (``FIELD_DEFINITIONS_TOO_MANY``), names
``[a-z][a-z0-9_]{0,63}``, descriptions ≤ 2,000 characters, ≤ 20 examples per field of ≤ 200
characters each, ≤ 8 values per label; each refused with a coded error naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlmodel import col

from cairn.app.core.errors import BadInput, NotFound
from cairn.app.core.ids import new_id, utcnow
from cairn.app.core.models import Document, DocumentVersion, FieldDefinition, FieldLabel
from cairn.app.core.text_rules import validate_identifier, validate_name, validate_text
from cairn.app.corpus import VersionMeta, choose_versions
from cairn.app.fields import store
from cairn.app.fields.errors import (
    FieldDefinitionsTooMany,
    FieldExamplesTooMany,
    FieldLabelInvalid,
    FieldNameDuplicate,
    FieldNameInvalid,
    FieldNotDefined,
)
from cairn.app.fields.execution import run_plan
from cairn.app.fields.extraction import ExtractReport, extract_collection
from cairn.app.fields.finders import text_key
from cairn.app.fields.plan import Plan, QueryResult, check_limits
from cairn.app.fields.suggest import Suggestion, suggest
from cairn.app.fields.training import candidate_keys, count_labels, ranker_for, train_from_labels, training_set
from cairn.app.fields.types import FieldSpec, FieldType, Multiplicity
from cairn.app.fields.values import coverage, known_at_time, read_values
from cairn.app.governance import Principal, ServicesPort

MAX_DEFINITIONS = 50
MAX_DESCRIPTION = 2_000
MAX_EXAMPLES = 20
MAX_LABEL_VALUES = 8
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True)
class DefineFieldsRequest:
    """Fields to create or replace (by name) in a collection; ``replace_all`` drops the
    collection's other fields."""

    collection_id: str
    fields: tuple[FieldSpec, ...]
    replace_all: bool = False


@dataclass(frozen=True)
class FieldsRequest:
    """The fields of a collection, with coverage as known at ``known_at`` (``YYYY-MM-DD``; None: now)."""

    collection_id: str
    known_at: str | None = None


@dataclass(frozen=True)
class ExtractRequest:
    """Extract a collection's pending versions (``force``: every current version)."""

    collection_id: str
    force: bool = False


@dataclass(frozen=True)
class SuggestRequest:
    """Suggest up to ``limit`` (1–50) fields for a collection."""

    collection_id: str
    limit: int = 20


@dataclass(frozen=True)
class LabelRequest:
    """An editor's truth for one field of a document's current version: ``values`` as text
    (parsed with the field's finder: "March 1, 2020", "2 years", "Delaware"); empty = the
    document has no value."""

    document_id: str
    field: str
    values: tuple[str, ...]


@dataclass
class FieldInfo:
    """A field definition with its coverage (documents with a cited value / live documents)
    and where its ranker comes from (``LABELS``, ``SEED``, ``ZERO_SHOT``), with label count."""

    spec: FieldSpec
    documents: int
    with_value: int
    coverage: float
    model: str
    labels: int


def validate_spec(spec: FieldSpec, where: str) -> None:
    """Refuse a bad definition (name, description, examples), naming ``where``."""
    if not isinstance(spec.name, str) or not _NAME.fullmatch(spec.name):
        raise FieldNameInvalid(
            f"{where}.name: {spec.name!r} must match [a-z][a-z0-9_]{{0,63}}",
            field=f"{where}.name",
        )
    if spec.description:
        validate_text(spec.description, f"{where}.description", MAX_DESCRIPTION)
    if len(spec.examples) > MAX_EXAMPLES:
        raise FieldExamplesTooMany(
            f"{where}.examples: {len(spec.examples)}; at most {MAX_EXAMPLES}",
            field=f"{where}.examples",
            limit=MAX_EXAMPLES,
        )
    for i, e in enumerate(spec.examples):
        validate_name(e, f"{where}.examples[{i}]", 200)


def validate_define(request: DefineFieldsRequest) -> None:
    """Every rule of a define request that needs no database."""
    validate_identifier(request.collection_id, "collectionId")
    if not 1 <= len(request.fields) <= MAX_DEFINITIONS:
        raise FieldDefinitionsTooMany(
            f"fields: {len(request.fields)}; between 1 and {MAX_DEFINITIONS} per call",
            field="fields",
            limit=MAX_DEFINITIONS,
        )
    names = [f.name for f in request.fields]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise FieldNameDuplicate(f"fields: {dup!r} is defined twice", field="fields")
    for i, spec in enumerate(request.fields):
        validate_spec(spec, f"fields[{i}]")


async def define_fields(services: ServicesPort, principal: Principal, request: DefineFieldsRequest) -> list[FieldSpec]:
    """Create or replace field definitions; bumps the collection's extraction revision (the
    next extraction re-runs every document). Returns the collection's definitions.

    Raises:
        BadInput (codes above), NotFound (collection).
    """
    validate_define(request)
    now = utcnow()
    async with services.db.session() as s:
        await store.get_collection_row(s, principal.workspace_id, request.collection_id)
        existing = {d.name: d for d in await store.definitions(s, request.collection_id)}
        wanted = {f.name for f in request.fields}
        total = len(wanted | (set() if request.replace_all else set(existing)))
        if total > MAX_DEFINITIONS:
            raise FieldDefinitionsTooMany(
                f"fields: the collection would have {total} fields; at most {MAX_DEFINITIONS}",
                field="fields",
                limit=MAX_DEFINITIONS,
            )
        if request.replace_all:
            for name, stale in existing.items():
                if name not in wanted:
                    await s.delete(stale)
        for spec in request.fields:
            row = existing.get(spec.name)
            if row is None:
                row = FieldDefinition(
                    id=new_id("fld"),
                    workspace_id=principal.workspace_id,
                    collection_id=request.collection_id,
                    name=spec.name,
                    type=spec.type.value,
                    created_at=now,
                    updated_at=now,
                )
                s.add(row)
            row.type, row.description = spec.type.value, spec.description
            row.multiplicity, row.examples, row.updated_at = spec.multiplicity.value, list(spec.examples), now
        st = await store.state(s, principal.workspace_id, request.collection_id)
        st.revision += 1
        await s.flush()
        return [store.spec_of(r) for r in await store.definitions(s, request.collection_id)]


async def list_fields(services: ServicesPort, principal: Principal, request: FieldsRequest) -> list[FieldInfo]:
    """The collection's fields with coverage (as of ``request.known_at`` when given).

    Raises:
        BadInput (collectionId), FieldKnownAtInvalid, NotFound (collection).
    """
    collection_id, known_at = request.collection_id, request.known_at
    validate_identifier(collection_id, "collectionId")
    at = known_at_time(known_at)
    async with services.db.session() as s:
        await store.get_collection_row(s, principal.workspace_id, collection_id)
        specs = [store.spec_of(r) for r in await store.definitions(s, collection_id)]
        st = await store.state(s, principal.workspace_id, collection_id)
        _, origin = ranker_for(st, specs)
        labels = await count_labels(s, collection_id)
        total, have = await coverage(
            s, workspace_id=principal.workspace_id, collection_id=collection_id, specs=specs, known_at=at
        )
    return [
        FieldInfo(
            sp,
            total,
            have[sp.name],
            round(have[sp.name] / total, 4) if total else 0.0,
            origin[sp.name],
            labels.get(sp.name, 0),
        )
        for sp in specs
    ]


async def extract_fields(
    services: ServicesPort,
    principal: Principal,
    request: ExtractRequest,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> ExtractReport:
    """Extract the collection's pending versions (``request.force``: every current version);
    ``progress(done, total)`` is called as documents finish (the CLI's bar).

    Raises:
        BadInput (collectionId), NotFound (collection).
    """
    validate_identifier(request.collection_id, "collectionId")
    return await extract_collection(
        services.db,
        workspace_id=principal.workspace_id,
        collection_id=request.collection_id,
        force=request.force,
        progress=progress,
    )


async def extract_on_new_version(
    services: ServicesPort, principal: Principal, request: ExtractRequest
) -> ExtractReport | None:
    """The corpus write hook: re-extract the collection's learned fields after a document got a
    new version (``None`` when the collection defines no fields, nothing is run then)."""
    async with services.db.session() as s:
        if not await store.definitions(s, request.collection_id):
            return None
    return await extract_fields(services, principal, request)


async def query_fields(services: ServicesPort, principal: Principal, plan: Plan) -> QueryResult:
    """Run a plan (limits in :mod:`app.fields.plan`, operators in :mod:`app.fields.operands`);
    values as known at ``plan.known_at``, each citation re-checked live."""
    validate_identifier(plan.collection_id, "plan.collectionId")
    check_limits(plan)
    at = known_at_time(plan.known_at)
    async with services.db.session() as s:
        await store.get_collection_row(s, principal.workspace_id, plan.collection_id)
        specs = [store.spec_of(r) for r in await store.definitions(s, plan.collection_id)]
        docs = await read_values(
            s, workspace_id=principal.workspace_id, collection_id=plan.collection_id, specs=specs, known_at=at
        )
    return run_plan(plan, specs, docs)


async def label_value(services: ServicesPort, principal: Principal, request: LabelRequest) -> list[str]:
    """Record an editor's truth for a field of a document's current version (replacing an
    earlier label of that version). Each value is parsed with the field's finder and must
    parse (``FIELD_LABEL_INVALID``). Returns the stored keys. Train with :func:`train_fields`.
    """
    validate_identifier(request.document_id, "documentId")
    if len(request.values) > MAX_LABEL_VALUES:
        raise FieldLabelInvalid(
            f"values: {len(request.values)}; at most {MAX_LABEL_VALUES}",
            field="values",
            limit=MAX_LABEL_VALUES,
        )
    async with services.db.session() as s:
        doc = await s.get(Document, request.document_id)
        if doc is None or doc.workspace_id != principal.workspace_id or doc.deleted_at is not None:
            raise NotFound(f"document {request.document_id!r} not found", field="documentId")
        specs = {r.name: store.spec_of(r) for r in await store.definitions(s, doc.collection_id)}
        spec = specs.get(request.field)
        if spec is None:
            raise FieldNotDefined(
                f"field: {request.field!r} is not defined in the document's collection",
                field="field",
            )
        versions = (
            (await s.execute(select(DocumentVersion).where(col(DocumentVersion.document_id) == doc.id))).scalars().all()
        )
        now = utcnow()
        chosen = choose_versions(
            [VersionMeta(v.id, v.document_id, v.number, v.valid_from, v.valid_to, v.recorded_at) for v in versions],
            valid_time=now,
            system_time=now,
            now=now,
        )
        if doc.id not in chosen:
            raise NotFound(f"document {request.document_id!r} has no current version", field="documentId")
        version = next(v for v in versions if v.id == chosen[doc.id].id)
        keys = []
        for i, raw in enumerate(request.values):
            validate_name(raw, f"values[{i}]", 500)
            found = candidate_keys(raw, spec.type)
            if spec.type == FieldType.TEXT:
                keys.append(text_key(raw))
            elif len(found) == 1:
                keys.append(next(iter(found)))
            else:
                raise FieldLabelInvalid(
                    f"values[{i}]: {raw!r} is not one {spec.type.value} value",
                    field=f"values[{i}]",
                )
        if spec.multiplicity == Multiplicity.ONE and len(keys) > 1:
            raise FieldLabelInvalid(f"values: field {spec.name!r} takes one value", field="values")
        row = (
            await s.execute(
                select(FieldLabel).where(
                    col(FieldLabel.version_id) == version.id, col(FieldLabel.field_name) == spec.name
                )
            )
        ).scalar_one_or_none()
        if row is None:
            row = FieldLabel(
                id=new_id("flb"),
                workspace_id=principal.workspace_id,
                collection_id=doc.collection_id,
                document_id=doc.id,
                version_id=version.id,
                field_name=spec.name,
                created_at=now,
            )
            s.add(row)
        row.keys, row.member_id, row.created_at = keys, principal.member_id, now
        return keys


async def train_fields(services: ServicesPort, principal: Principal, collection_id: str) -> dict[str, str]:
    """Retrain the collection's ranker from its labels (fields with labels on ≥ 2 documents),
    bump the revision so the next extraction re-runs. Returns field → model source."""
    validate_identifier(collection_id, "collectionId")
    async with services.db.session() as s:
        await store.get_collection_row(s, principal.workspace_id, collection_id)
        specs = [store.spec_of(r) for r in await store.definitions(s, collection_id)]
        labelled = await training_set(s, collection_id)
    model = train_from_labels(specs, labelled)
    async with services.db.session() as s:
        st = await store.state(s, principal.workspace_id, collection_id)
        st.model, st.trained_at = model, utcnow()
        st.revision += 1
        _, origin = ranker_for(st, specs)
    return origin


async def suggest_fields(services: ServicesPort, principal: Principal, request: SuggestRequest) -> list[Suggestion]:
    """Fields suggested by recurring ``Label: value`` lines of the collection's current
    versions (never applied; an editor defines them). ``request.limit`` 1–50.

    Raises:
        BadInput (collectionId, limit), NotFound (collection).
    """
    collection_id, limit = request.collection_id, request.limit
    validate_identifier(collection_id, "collectionId")
    if not 1 <= limit <= 50:
        raise BadInput(f"limit: {limit}; between 1 and 50", field="limit", limit=50)
    async with services.db.session() as s:
        await store.get_collection_row(s, principal.workspace_id, collection_id)
        existing = [d.name for d in await store.definitions(s, collection_id)]
        now = utcnow()
        current = choose_versions(await store.live_versions(s, collection_id), valid_time=now, system_time=now, now=now)
        ids = [v.id for v in current.values()][:2000]
        texts = [
            t
            for (t,) in (
                await s.execute(select(col(DocumentVersion.text)).where(col(DocumentVersion.id).in_(ids)))
            ).all()
        ]
    return suggest(texts, existing, limit)
