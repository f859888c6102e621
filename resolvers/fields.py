"""Learned fields (SPEC §5): Strawberry types and resolvers (rules in app.fields).

Reads (``context:read``): ``fields(collectionId, knownAt)``, ``queryFields(plan)``. Member-only:
``suggestFields`` (read), ``defineFields`` (collection:write), ``extractFields``,
``labelFieldValue``, ``trainFields`` (document:write).
"""

from __future__ import annotations

from enum import Enum

import strawberry
from strawberry.scalars import JSON

from cairn.app import fields as fl
from cairn.app.core.errors import BadInput
from cairn.app.core.text_rules import validate_identifier
from cairn.app.governance import Governed, Principal
from cairn.resolvers.types import Info

FieldTypeEnum = strawberry.enum(fl.FieldType, name="FieldType", description="A learned field's value type.")
MultiplicityEnum = strawberry.enum(
    fl.Multiplicity, name="FieldMultiplicity", description="ONE value per document, or MANY."
)


@strawberry.enum(description="Typed filter operators (see queryFields).")
class FieldOperator(Enum):
    EQ = "EQ"
    NE = "NE"
    LT = "LT"
    LTE = "LTE"
    GT = "GT"
    GTE = "GTE"
    CONTAINS = "CONTAINS"
    IN = "IN"
    EXISTS = "EXISTS"
    MISSING = "MISSING"


@strawberry.enum(description="Aggregates: COUNT of documents, MIN/MAX (NUMBER MONEY DATE DURATION), SUM/AVG.")
class FieldAggregateOp(Enum):
    COUNT = "COUNT"
    MIN = "MIN"
    MAX = "MAX"
    SUM = "SUM"
    AVG = "AVG"


@strawberry.input(
    description="A field definition: name [a-z][a-z0-9_]{0,63}, type, description, multiplicity, examples (≤ 20)."
)
class FieldDefinitionInput:
    name: str
    type: FieldTypeEnum  # type: ignore[valid-type]
    description: str = ""
    multiplicity: MultiplicityEnum = fl.Multiplicity.ONE  # type: ignore[valid-type]
    examples: list[str] = strawberry.field(default_factory=list)


@strawberry.type(description="A learned field of a collection with its coverage.")
class FieldDefinition:
    name: str
    type: FieldTypeEnum  # type: ignore[valid-type]
    description: str
    multiplicity: MultiplicityEnum  # type: ignore[valid-type]
    examples: list[str]
    documents: int = strawberry.field(description="Live documents of the collection.")
    documents_with_value: int = strawberry.field(description="Documents with a cited value.")
    coverage: float = strawberry.field(description="documentsWithValue / documents (0–1).")
    model: str = strawberry.field(
        description="LABELS (trained on this collection's labels), SEED (shipped Kleister NDA model) or ZERO_SHOT."
    )
    labels: int = strawberry.field(description="Documents an editor labelled for this field.")


@strawberry.type(description="Where a value is stated: versionText[start:end] (passage passageId, its SHA-256).")
class FieldCitation:
    document_id: strawberry.ID
    version_id: strawberry.ID
    passage_id: strawberry.ID
    start: int
    end: int
    sha256: str


@strawberry.type(
    description="A normalised value (DATE ISO-8601, MONEY {amount, currency}, NUMBER {value, unit}, DURATION {amount, unit}, TEXT, BOOLEAN) with its citation, or null with uncitedReason. stale: the citation no longer checks out against the current text (reported, not shown as fact)."
)
class FieldValue:
    field: str
    value: JSON | None
    key: str | None
    score: float
    citation: FieldCitation | None
    uncited_reason: str | None
    stale: bool
    source: str = strawberry.field(description="MODEL (the ranker) or LABEL (an editor).")


@strawberry.type(description="One document's values of the plan's fields.")
class FieldRow:
    document_id: strawberry.ID
    external_id: str
    title: str
    version_id: strawberry.ID
    version_number: int
    values: list[FieldValue]


@strawberry.input(
    description='field op value; value is JSON typed by the field ("2 years", "2020-01-31", {amount, currency}, a list for IN; none for EXISTS/MISSING).'
)
class FieldFilterInput:
    field: str
    op: FieldOperator
    value: JSON | None = None


@strawberry.input
class FieldSortInput:
    field: str
    descending: bool = False


@strawberry.input(description="An aggregate over the matched documents, optionally per groupBy value (≤ 50 groups).")
class FieldAggregateInput:
    op: FieldAggregateOp
    field: str | None = None
    group_by: str | None = None


@strawberry.input(
    description="A structured plan: ≤ 6 fields, ≤ 6 filters, sort, limit 1–200, aggregate, knownAt YYYY-MM-DD."
)
class FieldQueryPlanInput:
    collection_id: strawberry.ID
    fields: list[str]
    filters: list[FieldFilterInput] = strawberry.field(default_factory=list)
    sort: list[FieldSortInput] = strawberry.field(default_factory=list)
    limit: int = 50
    aggregate: FieldAggregateInput | None = None
    known_at: str | None = strawberry.field(
        default=None, description="Values as known on that date (the versions valid then)."
    )


@strawberry.type
class FieldGroup:
    key: JSON | None = strawberry.field(description="The groupBy value (null: documents without one).")
    documents: int
    value: JSON | None = strawberry.field(description="The aggregate's result.")


@strawberry.type
class FieldCoverage:
    field: str
    coverage: float


@strawberry.type
class FieldQueryResult:
    rows: list[FieldRow]
    matched: int = strawberry.field(description="Documents matching the filters (before limit).")
    documents: int = strawberry.field(description="Live documents of the collection.")
    groups: list[FieldGroup] | None
    coverage: list[FieldCoverage]
    coverage_lines: list[str] = strawberry.field(description="One line per used field whose coverage is under 90%.")
    incomplete: bool


@strawberry.type
class ExtractFieldsResult:
    documents: int
    values: int
    nulls: int
    seconds: float


@strawberry.type(description="A suggested field (never applied; define it to use it).")
class FieldSuggestion:
    name: str
    type: FieldTypeEnum  # type: ignore[valid-type]
    label: str
    documents: int
    examples: list[str]


@strawberry.type
class TrainFieldsResult:
    field: str
    model: str


def to_value(v: fl.ValueView) -> FieldValue:
    """Domain value → GraphQL."""
    cite = None
    if v.value is not None and v.passage_id and v.start is not None and v.end is not None and v.sha256:
        cite = FieldCitation(
            document_id=strawberry.ID(v.document_id),
            version_id=strawberry.ID(v.version_id),
            passage_id=strawberry.ID(v.passage_id),
            start=v.start,
            end=v.end,
            sha256=v.sha256,
        )
    return FieldValue(
        field=v.field,
        value=v.value,
        key=v.key,
        score=v.score,
        citation=cite,
        uncited_reason=v.uncited_reason,
        stale=v.stale,
        source=v.source,
    )


def _spec(i: int, d: FieldDefinitionInput) -> fl.FieldSpec:
    return fl.FieldSpec(d.name, fl.FieldType(d.type), d.description, fl.Multiplicity(d.multiplicity), tuple(d.examples))


def _define_request(
    collection_id: str, fields: list[FieldDefinitionInput], replace_all: bool
) -> fl.DefineFieldsRequest:
    return fl.DefineFieldsRequest(collection_id, tuple(_spec(i, d) for i, d in enumerate(fields)), replace_all)


def _plan(p: FieldQueryPlanInput) -> fl.Plan:
    agg = None
    if p.aggregate is not None:
        agg = fl.Aggregate(p.aggregate.op.value, p.aggregate.field, p.aggregate.group_by)
    return fl.Plan(
        collection_id=p.collection_id,
        fields=tuple(p.fields),
        filters=tuple(fl.Filter(f.field, f.op.value, f.value) for f in p.filters),
        sort=tuple(fl.Sort(s.field, s.descending) for s in p.sort),
        limit=p.limit,
        aggregate=agg,
        known_at=p.known_at,
    )


def _validate_fields(collection_id: str, known_at: str | None = None) -> None:
    validate_identifier(collection_id, "collectionId")


def _validate_plan(plan: FieldQueryPlanInput) -> None:
    validate_identifier(plan.collection_id, "plan.collectionId")
    fl.check_limits(_plan(plan))


def _validate_define(collection_id: str, fields: list[FieldDefinitionInput], replace_all: bool = False) -> None:
    fl.validate_define(_define_request(collection_id, fields, replace_all))


def _validate_extract(collection_id: str, force: bool = False) -> None:
    validate_identifier(collection_id, "collectionId")


def _validate_label(document_id: str, field: str, values: list[str]) -> None:
    validate_identifier(document_id, "documentId")
    validate_identifier(field, "field")


def _validate_suggest(collection_id: str, limit: int = 20) -> None:
    validate_identifier(collection_id, "collectionId")
    if not 1 <= limit <= 50:
        raise BadInput(f"limit: {limit}; between 1 and 50", field="limit", limit=50)


@strawberry.type
class FieldQuery:
    @strawberry.field(
        description="The collection's learned fields with coverage (share of documents with a cited value).",
        extensions=[Governed("fields", validate=_validate_fields)],
    )
    async def fields(
        self, info: Info, collection_id: strawberry.ID, principal: Principal, known_at: str | None = None
    ) -> list[FieldDefinition]:
        infos = await fl.list_fields(info.context.services, principal, fl.FieldsRequest(collection_id, known_at))
        return [
            FieldDefinition(
                name=i.spec.name,
                type=i.spec.type,
                description=i.spec.description,
                multiplicity=i.spec.multiplicity,
                examples=list(i.spec.examples),
                documents=i.documents,
                documents_with_value=i.with_value,
                coverage=i.coverage,
                model=i.model,
                labels=i.labels,
            )
            for i in infos
        ]

    @strawberry.field(
        description="Run a structured plan over a collection's field values; every value cited and re-verified live.",
        extensions=[Governed("queryFields", validate=_validate_plan)],
    )
    async def query_fields(self, info: Info, plan: FieldQueryPlanInput, principal: Principal) -> FieldQueryResult:
        r = await fl.query_fields(info.context.services, principal, _plan(plan))
        return FieldQueryResult(
            rows=[
                FieldRow(
                    document_id=strawberry.ID(d.document_id),
                    external_id=d.external_id,
                    title=d.title,
                    version_id=strawberry.ID(d.version_id),
                    version_number=d.version_number,
                    values=[to_value(v) for f in r.fields for v in d.values.get(f, [])],
                )
                for d in r.rows
            ],
            matched=r.matched,
            documents=r.documents,
            groups=None
            if r.groups is None
            else [FieldGroup(key=g.key, documents=g.documents, value=g.value) for g in r.groups],
            coverage=[FieldCoverage(field=k, coverage=v) for k, v in r.coverage.items()],
            coverage_lines=r.coverage_lines,
            incomplete=r.incomplete,
        )

    @strawberry.field(
        description="Fields suggested from recurring 'Label: value' lines (never applied).",
        extensions=[Governed("suggestFields", validate=_validate_suggest)],
    )
    async def suggest_fields(
        self, info: Info, collection_id: strawberry.ID, principal: Principal, limit: int = 20
    ) -> list[FieldSuggestion]:
        got = await fl.suggest_fields(info.context.services, principal, fl.SuggestRequest(collection_id, limit))
        return [
            FieldSuggestion(name=s.name, type=s.type, label=s.label, documents=s.documents, examples=list(s.examples))
            for s in got
        ]


@strawberry.type
class FieldMutation:
    @strawberry.mutation(
        description="Create or replace learned fields of a collection (collection:write).",
        extensions=[Governed("defineFields", validate=_validate_define)],
    )
    async def define_fields(
        self,
        info: Info,
        collection_id: strawberry.ID,
        fields: list[FieldDefinitionInput],
        principal: Principal,
        replace_all: bool = False,
    ) -> list[str]:
        specs = await fl.define_fields(
            info.context.services, principal, _define_request(collection_id, fields, replace_all)
        )
        return [s.name for s in specs]

    @strawberry.mutation(
        description="Extract the collection's fields from documents not yet extracted (force: all).",
        extensions=[Governed("extractFields", validate=_validate_extract)],
    )
    async def extract_fields(
        self, info: Info, collection_id: strawberry.ID, principal: Principal, force: bool = False
    ) -> ExtractFieldsResult:
        r = await fl.extract_fields(info.context.services, principal, fl.ExtractRequest(collection_id, force))
        return ExtractFieldsResult(documents=r.documents, values=r.values, nulls=r.nulls, seconds=r.seconds)

    @strawberry.mutation(
        description="Confirm or correct a field of a document's current version (empty values: none).",
        extensions=[Governed("labelFieldValue", validate=_validate_label)],
    )
    async def label_field_value(
        self, info: Info, document_id: strawberry.ID, field: str, values: list[str], principal: Principal
    ) -> list[str]:
        return await fl.label_value(
            info.context.services, principal, fl.LabelRequest(document_id, field, tuple(values))
        )

    @strawberry.mutation(
        description="Retrain the collection's ranker from its labels.",
        extensions=[Governed("trainFields", validate=_validate_extract)],
    )
    async def train_fields(
        self, info: Info, collection_id: strawberry.ID, principal: Principal
    ) -> list[TrainFieldsResult]:
        origin = await fl.train_fields(info.context.services, principal, collection_id)
        return [TrainFieldsResult(field=k, model=v) for k, v in sorted(origin.items())]
