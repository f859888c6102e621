"""How big a GraphQL document may be before it is parsed or validated, and what its selected
operation runs at the root.

The token limit (2,000, at parse) does not bound what a document costs. Measured on this
machine kind (2 cores, loaded), one request each, parse + limits + graphql-core validation:

- 399 operations ``query qN { __typename }`` (≈1,995 tokens, 10 KB): 90–155 ms;
- 280 fragments ``fragment FN on Query { __typename }`` (≈2,000 tokens): 130 ms;
- one operation of ≈2,000 tokens (inline fragments, directives, variables): 21–45 ms;
- characters the lexer skips without counting a token (a comment, white space, one long
  string): 100 ms per 256 KiB, 1.2–2.6 s per 4 MiB — and a WebSocket message may be 16 MiB.

Validation is per operation and per fragment (every operation is validated whether it is
selected or not, as the GraphQL spec requires), so the count of definitions is what multiplies
the cost. The limits below are therefore checked first, by :mod:`resolvers.schema` for every
transport (``POST``/``GET /graphql``, the WebSocket, Strawberry's multipart stream):

- :data:`MAX_DOCUMENT_CHARS` before the document is lexed at all;
- :data:`MAX_OPERATIONS` and :data:`MAX_DEFINITIONS` right after parsing, before the linear
  limits of :mod:`resolvers.limits` and before any validation rule.

Bounding the document rather than validating only the selected operation: validating one
operation would still parse the whole text, and would answer documents the spec calls invalid
(a fragment used only by an unselected operation, two operations of one name); a bound keeps
the spec's rules and refuses at once, with a message naming the limit.
"""

from __future__ import annotations

import functools

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    parse,
)

from cairn.resolvers.limits import FragmentFold

MAX_TOKENS = 2_000
"""Tokens of one document, counted by graphql-core's parser (comments and white space are free)."""

MAX_DOCUMENT_CHARS = 32_768
"""Characters of one document (query text; variables do not count). 32 KiB lex in ≈12 ms here;
the largest document in the test suite is under 2 KiB; long text goes in variables."""

MAX_OPERATIONS = 10
"""Operations in one document (a client sends one; GraphiQL sends its editor's few)."""

MAX_DEFINITIONS = 50
"""Definitions in one document: operations plus fragments (GraphiQL's introspection has 4)."""


def length_error(query: str) -> str | None:
    """The refusal of a document over :data:`MAX_DOCUMENT_CHARS` characters, else None."""
    if len(query) <= MAX_DOCUMENT_CHARS:
        return None
    return (
        f"the document is {len(query):,} characters; the limit is {MAX_DOCUMENT_CHARS:,} characters "
        "per document: send long text in variables"
    )


def definition_errors(document: DocumentNode, operation_name: str | None) -> list[str]:
    """Refusals of a document over :data:`MAX_OPERATIONS` or :data:`MAX_DEFINITIONS`, or of
    several operations with no ``operation_name`` (the GraphQL spec requires one; Strawberry
    ran the first, even a mutation). Empty: the document may be validated."""
    operations = sum(isinstance(d, OperationDefinitionNode) for d in document.definitions)
    errors = []
    if operation_name is None and 1 < operations <= MAX_OPERATIONS:
        errors.append("the document has several operations: send operationName to choose one")
    if operations > MAX_OPERATIONS:
        errors.append(
            f"the document has {operations:,} operations; the limit is {MAX_OPERATIONS} operations per "
            "document (every operation is validated, not only the one operationName selects): send the one you run"
        )
    elif len(document.definitions) > MAX_DEFINITIONS:
        errors.append(
            f"the document has {len(document.definitions):,} definitions (operations and fragments); the "
            f"limit is {MAX_DEFINITIONS} per document"
        )
    return errors


class _RootNames(FragmentFold[frozenset[str]]):
    """Field names a selection set selects at its own level, fragments expanded (memoised)."""

    def empty(self) -> frozenset[str]:
        return frozenset()

    def fold(self, node: SelectionSetNode) -> frozenset[str]:
        names: set[str] = set()
        for sel in node.selections:
            if isinstance(sel, FieldNode):
                names.add(sel.name.value)
            elif isinstance(sel, InlineFragmentNode):
                names |= self.fold(sel.selection_set)
            elif isinstance(sel, FragmentSpreadNode):
                names |= self.fragment(sel.name.value)
        return frozenset(names)


def root_fields(document: DocumentNode, operation_name: str | None) -> tuple[str, frozenset[str]] | None:
    """The operation ``operation_name`` selects (the only one when None): its type (``query``,
    ``mutation``, ``subscription``) and the root field names it selects, fragments expanded
    (``__typename``, ``__schema`` and ``__type`` included). None when no operation matches."""
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    chosen = [op for op in ops if operation_name is None or (op.name is not None and op.name.value == operation_name)]
    if len(chosen) != 1:
        return None
    op = chosen[0]
    return op.operation.value, _RootNames(document).fold(op.selection_set)


cached_parse = functools.lru_cache(maxsize=128)(parse)
"""graphql-core's ``parse``, cached per (text, options): the one parse of a document, shared by
:class:`resolvers.schema.SafeParserCache` and ``CairnSchema.execute``'s look at its operations (each parsed it
once: two parses of every new document, 2 × 11 ms for 2,000 tokens on an idle machine here)."""


@functools.lru_cache(maxsize=512)
def operations_of(query: str) -> tuple[tuple[str | None, str], ...]:
    """``(name, operation type)`` of each operation in a document (``()`` if it is over the
    length limit or does not parse within the token limit: the schema's own steps report that)."""
    if length_error(query) is not None:
        return ()
    try:
        doc = cached_parse(query, max_tokens=MAX_TOKENS)  # the key SafeParserCache uses
    except GraphQLError:
        return ()
    return tuple(
        (d.name.value if d.name else None, d.operation.value)
        for d in doc.definitions
        if isinstance(d, OperationDefinitionNode)
    )
