"""Which input field a GraphQL request error is about: ``extensions.field`` for errors that
graphql-core raises before a resolver runs, and the ``DateTime`` scalar whose refusals say why.

graphql-core reports a wrong input value in two ways: a *literal* in the document (validation,
``GRAPHQL_VALIDATION_FAILED``) at the position of the value, and a *variable's* value
(coercion, ``BAD_USER_INPUT``) as ``Variable '$v' has invalid value at .a.b: …``. Neither
names the field the way Cairn's own checks do, so :func:`error_field` turns both into that
name: the argument, then the input object fields, list indices in brackets —
``input.budget.maxTokens``, ``input.filters.collectionIds[2]``, ``input.bogus`` (an unknown
field). It reads the parsed document: every argument value's span and where each variable is
used (a variable used in several places: its first use).

:data:`DateTime` replaces Strawberry's scalar of the same name and format (ISO 8601 via
``dateutil.parser.isoparse``), whose refusal of a literal carried neither the position nor the
field; ours raises ``ValueError``, which graphql-core reports at the value's position.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterator

import dateutil.parser
import strawberry
from graphql import GraphQLError
from graphql.language import (
    ArgumentNode,
    DocumentNode,
    ListValueNode,
    Node,
    ObjectValueNode,
    ValueNode,
    VariableDefinitionNode,
    VariableNode,
)

_VARIABLE = re.compile(r"^Variable '\$(?P<var>\w+)'(?: has invalid value(?: at (?P<path>[^:\s]+))?:)?")
_MISSING_ARGUMENT = re.compile(r"^Argument '(?:[^'(]*\((?P<arg>\w+):\)|(?P<name>\w+))' of (?:required )?type '[^']+'")
_MISSING_FIELD = re.compile(r"to include required field '(?P<field>\w+)'")


def _values(node: ValueNode, path: str) -> Iterator[tuple[Node, str]]:
    """``(node, path)`` for a value and every value nested in it (object fields: the field node too)."""
    yield node, path
    if isinstance(node, ObjectValueNode):
        for field in node.fields:
            inner = f"{path}.{field.name.value}"
            yield field, inner
            yield from _values(field.value, inner)
    elif isinstance(node, ListValueNode):
        for i, item in enumerate(node.values):
            yield from _values(item, f"{path}[{i}]")


def _arguments(node: Node) -> Iterator[ArgumentNode]:
    """Every argument node of the document (fields and directives, fragments included)."""
    if isinstance(node, ArgumentNode):
        yield node
        return
    if isinstance(node, VariableDefinitionNode):
        return  # a default value is not an argument
    for key in node.keys:
        child = getattr(node, key, None)
        children = child if isinstance(child, (list, tuple)) else (child,)
        for c in children:
            if isinstance(c, Node):
                yield from _arguments(c)


@functools.lru_cache(maxsize=128)
def _index(document: DocumentNode) -> tuple[tuple[tuple[int, int, str], ...], dict[str, str]]:
    """``(spans, uses)``: ``(start, end, path)`` of every argument value (and object field) by
    character offset, and variable name → the path of its first use."""
    spans: list[tuple[int, int, str]] = []
    uses: dict[str, str] = {}
    for arg in _arguments(document):
        for node, path in _values(arg.value, arg.name.value):
            if node.loc is not None:
                spans.append((node.loc.start, node.loc.end, path))
            if isinstance(node, VariableNode):
                uses.setdefault(node.name.value, path)
    return tuple(spans), uses


def error_field(error: GraphQLError, document: DocumentNode | None) -> str | None:
    """The input field ``error`` is about, in Cairn's naming (module doc), or None.

    Args:
        error: A request error raised before execution (validation or variable coercion).
        document: The parsed request document (None: not parsed, nothing to name).

    Returns:
        E.g. ``input.asOf.validTime``; None when the error is not about one input value
        (an unknown field of the query, a syntax error) or the document was not parsed.
    """
    if document is None:
        return None
    spans, uses = _index(document)
    message = error.message
    variable = _VARIABLE.match(message)
    if variable is not None:
        used = uses.get(variable["var"])
        return None if used is None else used + (variable["path"] or "")
    argument = _MISSING_ARGUMENT.match(message)
    if argument is not None:
        return argument["arg"] or argument["name"]
    if not error.positions:
        return None
    at = next(iter(error.positions))
    inside = [(start, end, path) for start, end, path in spans if start <= at < end]
    if not inside:
        return None
    path = max(inside, key=lambda s: (s[0], -s[1]))[2]  # the innermost value at the position
    missing = _MISSING_FIELD.search(message)
    return f"{path}.{missing['field']}" if missing is not None else path


def parse_datetime(value: object) -> dt.datetime:
    """``DateTime`` input: an ISO 8601 date-time string (``dateutil.parser.isoparse``, as
    Strawberry's scalar). Whether a timezone is required is the field's rule (resolvers).

    Raises:
        ValueError: Not a string, or not ISO 8601 — with the expected form and the value.
    """
    if not isinstance(value, str):
        raise ValueError(f"a DateTime is an ISO 8601 string such as 2025-01-01T00:00:00Z, not {type(value).__name__}")
    try:
        return dateutil.parser.isoparse(value)
    except (ValueError, OverflowError):
        raise ValueError("not an ISO 8601 date-time such as 2025-01-01T00:00:00Z") from None


DateTime = strawberry.scalar(
    name="DateTime",
    description="Date with time (isoformat)",
    serialize=dt.datetime.isoformat,
    parse_value=parse_datetime,
)
"""The schema's ``DateTime`` (``StrawberryConfig.scalar_map`` for ``datetime``): Strawberry's name, description and
format; refusals as ``ValueError`` (module doc)."""
