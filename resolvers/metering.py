"""Metering of GraphQL documents that run no governed field (see :mod:`resolvers.schema`).

Every root field is governed and counts its own call against the caller's rate limit when it
runs; a document that selects only ``__typename`` or introspection, or that a limit or
validation refuses, runs none. :func:`metered` counts such a document as one ``reads`` call
(:func:`app.governance.meter_document`), so a credential cannot send documents unmetered.
"""

from __future__ import annotations

from graphql import GraphQLError
from strawberry.types.execution import ExecutionContext

from cairn.app.context import RequestContext
from cairn.app.core.errors import CairnError
from cairn.app.governance import meter_document, to_graphql_error
from cairn.resolvers.document_size import root_fields


def selects_governed_field(ctx: ExecutionContext) -> bool:
    """True when the selected operation selects a root field of the schema (every one is
    governed: :mod:`app.governance.contract`), not only ``__typename``/``__schema``/``__type``."""
    if ctx.graphql_document is None:  # not parsed: selects nothing
        return False
    selected = root_fields(ctx.graphql_document, ctx.operation_name)
    if selected is None:
        return False
    kind, names = selected
    root = {
        "query": ctx.schema._schema.query_type,
        "mutation": ctx.schema._schema.mutation_type,
        "subscription": ctx.schema._schema.subscription_type,
    }[kind]
    return root is not None and any(name in root.fields for name in names)


async def metered(ctx: ExecutionContext) -> GraphQLError | None:
    """Meter the document (:func:`app.governance.meter_document`): None within the limit, else
    the coded refusal. No request context (an in-process ``execute`` with no caller): nothing
    to count against."""
    request = ctx.context
    if not isinstance(request, RequestContext):
        return None
    try:
        await meter_document(request)
    except CairnError as exc:
        return to_graphql_error(request, exc)
    return None
