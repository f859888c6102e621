"""Learned fields (SPEC §5): typed values extracted from documents, each with a citation.

Finders (:mod:`app.fields.finders`) propose typed candidates with exact spans; the ranker
(:mod:`app.fields.ranker`) picks each field's value(s) and learns from editors' labels;
:mod:`app.fields.store` keeps definitions and each collection's state;
:mod:`app.fields.training` picks a collection's ranker and trains it from labels;
:mod:`app.fields.extraction` stores each version's values (versioned with the document);
:mod:`app.fields.values` reads them as of a date, citations re-checked;
``queryFields`` plans are shaped and limited in :mod:`app.fields.plan`, their filter operands
parsed and compared in :mod:`app.fields.operands` and run in :mod:`app.fields.execution`;
:mod:`app.fields.operations` is the entry point of every operation.

Public surface: other packages import only the names below (import-linter contract in
pyproject.toml).
"""

from cairn.app.fields.errors import (
    FieldDefinitionsTooMany,
    FieldExamplesTooMany,
    FieldKnownAtInvalid,
    FieldLabelInvalid,
    FieldNameDuplicate,
    FieldNameInvalid,
    FieldNotDefined,
    FieldQueryInvalidAggregate,
    FieldQueryInvalidFilter,
    FieldQueryInvalidPlan,
    FieldQueryLimitOutOfRange,
    FieldQueryNoFields,
    FieldQueryTooManyFields,
    FieldQueryTooManyFilters,
    FieldQueryTooManyGroups,
    FieldQueryTooManySortKeys,
)
from cairn.app.fields.extraction import ExtractReport, extract_collection
from cairn.app.fields.finders import find_candidates, text_key, verify_span
from cairn.app.fields.kleister import KLEISTER_NDA_FIELDS
from cairn.app.fields.operations import (
    DefineFieldsRequest,
    ExtractRequest,
    FieldInfo,
    FieldsRequest,
    LabelRequest,
    SuggestRequest,
    define_fields,
    extract_fields,
    extract_on_new_version,
    label_value,
    list_fields,
    query_fields,
    suggest_fields,
    train_fields,
    validate_define,
)
from cairn.app.fields.plan import (
    MAX_FIELDS,
    MAX_FILTERS,
    MAX_GROUPS,
    MAX_LIMIT,
    OPS,
    Aggregate,
    Filter,
    Group,
    Plan,
    QueryResult,
    Sort,
    check_limits,
)
from cairn.app.fields.ranker import DocFeatures, FieldModel, Ranker, choose, doc_features, f1, train, train_field
from cairn.app.fields.suggest import Suggestion
from cairn.app.fields.types import Candidate, Extracted, FieldSpec, FieldType, Multiplicity
from cairn.app.fields.values import DocValues, ValueView

__all__ = [
    "KLEISTER_NDA_FIELDS",
    "MAX_FIELDS",
    "MAX_FILTERS",
    "MAX_GROUPS",
    "MAX_LIMIT",
    "OPS",
    "Aggregate",
    "Candidate",
    "DefineFieldsRequest",
    "DocFeatures",
    "DocValues",
    "ExtractReport",
    "ExtractRequest",
    "Extracted",
    "FieldDefinitionsTooMany",
    "FieldExamplesTooMany",
    "FieldInfo",
    "FieldKnownAtInvalid",
    "FieldLabelInvalid",
    "FieldModel",
    "FieldNameDuplicate",
    "FieldNameInvalid",
    "FieldNotDefined",
    "FieldQueryInvalidAggregate",
    "FieldQueryInvalidFilter",
    "FieldQueryInvalidPlan",
    "FieldQueryLimitOutOfRange",
    "FieldQueryNoFields",
    "FieldQueryTooManyFields",
    "FieldQueryTooManyFilters",
    "FieldQueryTooManyGroups",
    "FieldQueryTooManySortKeys",
    "FieldSpec",
    "FieldType",
    "FieldsRequest",
    "Filter",
    "Group",
    "LabelRequest",
    "Multiplicity",
    "Plan",
    "QueryResult",
    "Ranker",
    "Sort",
    "SuggestRequest",
    "Suggestion",
    "ValueView",
    "check_limits",
    "choose",
    "define_fields",
    "doc_features",
    "extract_collection",
    "extract_fields",
    "extract_on_new_version",
    "f1",
    "find_candidates",
    "label_value",
    "list_fields",
    "query_fields",
    "suggest_fields",
    "text_key",
    "train",
    "train_field",
    "train_fields",
    "validate_define",
    "verify_span",
]
