"""The learned-field errors: one :class:`~app.core.errors.BadInput` subclass per SPEC code (400).

Each message names the input field and, where one applies, the limit (``field=``, ``limit=``
in ``extensions``).
"""

from __future__ import annotations

from cairn.app.core.errors import BadInput


class FieldNameInvalid(BadInput):
    """A field name not matching ``[a-z][a-z0-9_]{0,63}`` (400 ``FIELD_NAME_INVALID``)."""

    code = "FIELD_NAME_INVALID"


class FieldNameDuplicate(BadInput):
    """A field named twice in one define call (400 ``FIELD_NAME_DUPLICATE``)."""

    code = "FIELD_NAME_DUPLICATE"


class FieldExamplesTooMany(BadInput):
    """More than 20 examples on one field (400 ``FIELD_EXAMPLES_TOO_MANY``)."""

    code = "FIELD_EXAMPLES_TOO_MANY"


class FieldDefinitionsTooMany(BadInput):
    """More than 50 fields in a call or a collection (400 ``FIELD_DEFINITIONS_TOO_MANY``)."""

    code = "FIELD_DEFINITIONS_TOO_MANY"


class FieldNotDefined(BadInput):
    """A field name the collection does not define (400 ``FIELD_NOT_DEFINED``)."""

    code = "FIELD_NOT_DEFINED"


class FieldLabelInvalid(BadInput):
    """A label value that does not parse as one value of the field's type, or too many values
    (400 ``FIELD_LABEL_INVALID``)."""

    code = "FIELD_LABEL_INVALID"


class FieldKnownAtInvalid(BadInput):
    """``knownAt`` not a date ``YYYY-MM-DD`` (400 ``FIELD_KNOWN_AT_INVALID``)."""

    code = "FIELD_KNOWN_AT_INVALID"


class FieldQueryNoFields(BadInput):
    """A plan naming no field (400 ``FIELD_QUERY_NO_FIELDS``, ``limit`` 1: at least one)."""

    code = "FIELD_QUERY_NO_FIELDS"


class FieldQueryTooManyFields(BadInput):
    """A plan naming more than 6 fields (400 ``FIELD_QUERY_TOO_MANY_FIELDS``)."""

    code = "FIELD_QUERY_TOO_MANY_FIELDS"


class FieldQueryTooManyFilters(BadInput):
    """A plan with more than 6 filters (400 ``FIELD_QUERY_TOO_MANY_FILTERS``)."""

    code = "FIELD_QUERY_TOO_MANY_FILTERS"


class FieldQueryTooManySortKeys(BadInput):
    """A plan with too many sort keys (400 ``FIELD_QUERY_TOO_MANY_SORT_KEYS``)."""

    code = "FIELD_QUERY_TOO_MANY_SORT_KEYS"


class FieldQueryLimitOutOfRange(BadInput):
    """A plan ``limit`` outside 1–200 (400 ``FIELD_QUERY_LIMIT_OUT_OF_RANGE``)."""

    code = "FIELD_QUERY_LIMIT_OUT_OF_RANGE"


class FieldQueryInvalidPlan(BadInput):
    """A malformed plan, e.g. a field named twice (400 ``FIELD_QUERY_INVALID_PLAN``)."""

    code = "FIELD_QUERY_INVALID_PLAN"


class FieldQueryInvalidFilter(BadInput):
    """A filter whose operator or value does not fit the field's type (400 ``FIELD_QUERY_INVALID_FILTER``)."""

    code = "FIELD_QUERY_INVALID_FILTER"


class FieldQueryInvalidAggregate(BadInput):
    """An aggregate that does not fit its field's type (400 ``FIELD_QUERY_INVALID_AGGREGATE``)."""

    code = "FIELD_QUERY_INVALID_AGGREGATE"


class FieldQueryTooManyGroups(BadInput):
    """A ``groupBy`` with more than 50 groups (400 ``FIELD_QUERY_TOO_MANY_GROUPS``)."""

    code = "FIELD_QUERY_TOO_MANY_GROUPS"
