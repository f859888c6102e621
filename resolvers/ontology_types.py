"""Ontology GraphQL types: enums, inputs and results of the ontology operations
(:mod:`resolvers.ontology` holds the resolvers)."""

from __future__ import annotations

import enum
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from cairn.resolvers.interactions import OperationReceipt

MAX_INLINE_FILES = 50


@strawberry.enum(description="JSON rows, or TOON (Token-Oriented Object Notation: uniform rows as one table).")
class ResponseFormat(enum.Enum):
    JSON = "json"
    TOON = "toon"


@strawberry.enum
class SortDirection(enum.Enum):
    ASC = "asc"
    DESC = "desc"


@strawberry.enum(description="Where a condition's value comes from (only CONST today).")
class ValueFrom(enum.Enum):
    CONST = "const"


@strawberry.input(
    description="A condition tree: and/or with subConditions, or a leaf (field, operation, value + valueFrom)."
)
class ConditionInput:
    operation: str = strawberry.field(
        description="and | or | ==, !=, >, >=, <, <=, range, in, not_in, like, not_like, prefix, exist, not_exist, match, multi_match, knn"
    )
    field: str | None = None
    value: JSON | None = None
    value_from: ValueFrom | None = None
    sub_conditions: list[ConditionInput] | None = None
    limit_key: str | None = strawberry.field(default=None, description='knn only: "k".')
    limit_value: int | None = strawberry.field(default=None, description="knn only: number of neighbours, 1–1,000.")
    fields: list[str] | None = strawberry.field(
        default=None, description="multi_match only: full-text properties (default: field)."
    )


@strawberry.input(description="Flat filter (ANDed with the others); valueFrom is CONST implicitly.")
class FilterInput:
    field: str
    operation: str
    value: JSON | None = None
    value_from: ValueFrom | None = None
    limit_key: str | None = None
    limit_value: int | None = None


@strawberry.input
class SortInput:
    field: str
    direction: SortDirection = SortDirection.ASC


@strawberry.input(description="One CSV file given inline; table = name without .csv.")
class CsvFileInput:
    name: str
    content: str


@strawberry.type
class PropertyDefinition:
    name: str
    type: str = strawberry.field(description="string | integer | float | boolean | date | datetime")
    description: str
    full_text_index: bool
    vector_index: bool
    condition_operations: list[str] = strawberry.field(description="Operators this property supports in conditions.")


@strawberry.type
class ObjectTypeDefinition:
    id: str
    name: str
    description: str
    concept_groups: list[str]
    primary_key: list[str]
    instance_count: int
    vector_model: str | None
    properties: list[PropertyDefinition]


@strawberry.type
class ObjectTypesResult:
    kn_id: str
    object_types: list[ObjectTypeDefinition]
    receipt: OperationReceipt | None = None


@strawberry.type
class KnowledgeNetworkInfo:
    id: str
    name: str
    description: str
    generation: int
    loaded_at: datetime


@strawberry.type(description="A page of instances. rows (JSON) or toon (TOON text) by responseFormat.")
class ObjectInstancesResult:
    rows: JSON | None = strawberry.field(
        description="Rows: properties, _instanceIdentity, and _score only when match/knn is in the query."
    )
    toon: str | None = strawberry.field(description="With responseFormat TOON: the same rows as TOON ({rows: [...]}).")
    response_format: ResponseFormat
    total_count: int | None = strawberry.field(
        description="Matches ignoring limit; 0 = none; null = not computed (cursor pages)."
    )
    cursor: str | None = strawberry.field(description="Opaque; pass it back for the next page. Absent: no next page.")
    condition_source: str = strawberry.field(description="condition | filters | none: what was applied.")
    filters_ignored: bool
    messages: list[str]
    receipt: OperationReceipt | None = None


@strawberry.type
class RecallNode:
    object_type_id: str
    instance_identity: JSON
    properties: JSON
    score: float = strawberry.field(
        description="Fused score: RRF (k=60) over knn and match, times (1 + type relevance)."
    )
    reranker_score: float | None
    matched_by: list[str]


@strawberry.type
class SemanticRecallResult:
    nodes: list[RecallNode] | None
    toon: str | None
    object_types: JSON | None = strawberry.field(description="Compact definitions of the types that produced nodes.")
    selected_object_types: JSON = strawberry.field(description="Types searched in phase 2 with their relevance.")
    message: str | None
    receipt: OperationReceipt | None = None


@strawberry.type
class LoadKnowledgeNetworkResult:
    kn_id: str
    generation: int
    instances: JSON = strawberry.field(description="Object type id → instances loaded.")
    embedded: int
    vector_model: str | None
    receipt: OperationReceipt | None = None
