"""The schema: Query, Mutation, Subscription, plus the envelope, error codes and limits.

Limits: document tokens ≤ 2,000 (at parse); then, per operation with fragments expanded in
linear time (:mod:`resolvers.limits`), selections ≤ 10,000, depth ≤ 12, aliases ≤ 30,
contextPack ≤ 2, and one response name ≤ 50 times per selection set
(:mod:`resolvers.field_repeats`) — checked *before* graphql-core's validation rules run, so
a refused document costs one linear pass (:class:`LimitedValidation`). Parse, limit and
validation results are cached per document text.

Every error leaves with ``extensions.code``: resolver errors carry theirs (the adapter),
parse errors get ``GRAPHQL_PARSE_FAILED``, validation errors ``GRAPHQL_VALIDATION_FAILED``
(variable coercion: ``BAD_USER_INPUT``), anything else ``INTERNAL_SERVER_ERROR`` with its
message replaced (no internals leak). ``extensions.envelope`` is added to every result.
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import Iterator

import strawberry
from cross_web import HTTPException
from graphql import GraphQLError, GraphQLSyntaxError, OperationDefinitionNode, parse
from graphql.language import DocumentNode
from starlette.responses import Response
from strawberry.extensions import MaxTokensLimiter, ParserCache, SchemaExtension, ValidationCache
from strawberry.schema.config import StrawberryConfig
from strawberry.types.graphql import OperationType

from cairn.app.core.errors import CairnError
from cairn.resolvers.contextsets import ContextSetMutation, ContextSetQuery
from cairn.resolvers.decisions import DecisionMutation, DecisionQuery
from cairn.resolvers.documents import DocumentMutation, DocumentQuery
from cairn.resolvers.field_repeats import repeat_errors
from cairn.resolvers.fields import FieldMutation, FieldQuery
from cairn.resolvers.gaps import GapMutation, GapQuery
from cairn.resolvers.identity import IdentityMutation, IdentityQuery
from cairn.resolvers.input_paths import DateTime, error_field
from cairn.resolvers.interactions import TraceMutation
from cairn.resolvers.limits import MAX_DEPTH, MAX_SELECTIONS, limit_errors
from cairn.resolvers.memory import MemoryMutation, MemoryQuery
from cairn.resolvers.ontology import OntologyMutation, OntologyQuery
from cairn.resolvers.packs import PackQuery, PackSubscription
from cairn.resolvers.replay import ReplayQuery
from cairn.resolvers.templates import TemplateMutation, TemplateQuery
from cairn.resolvers.temporal import TemporalQuery

log = logging.getLogger("cairn.graphql")

MAX_TOKENS = 2_000


HTTP_STATUS_BY_CODE = {
    "GRAPHQL_PARSE_FAILED": 400,
    "GRAPHQL_VALIDATION_FAILED": 400,
    "BAD_USER_INPUT": 400,
}


@functools.lru_cache(maxsize=128)
def document_limit_errors(document: DocumentNode) -> tuple[str, ...]:
    """:func:`resolvers.limits.limit_errors` and :func:`resolvers.field_repeats.repeat_errors`,
    cached per parsed document (the parser cache hands back the same node for the same
    text). A document nested too deeply for the measuring recursion is refused, not a 500."""
    try:
        return (*limit_errors(document), *repeat_errors(document))
    except RecursionError:
        return (
            "the document nests fields and fragment spreads too deeply to measure; "
            f"the limits are depth {MAX_DEPTH} and {MAX_SELECTIONS:,} selections",
        )


class LimitedValidation(ValidationCache):
    """Document limits first, then graphql-core's rules (results cached).

    Strawberry's depth and alias limiters expanded every fragment spread (exponential time
    for nested spreads, ~1 h at n = 30) and ran in the same pass as every other rule. Here
    the linear, memoised measure of :mod:`resolvers.limits` runs alone first; a document over
    a limit is refused with ``GRAPHQL_VALIDATION_FAILED`` naming the limit and no other rule
    visits it. Validation rules stay graphql-core's own tuple, so the validation cache keys
    on the same rules every time.
    """

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        errors = document_limit_errors(ctx.graphql_document)
        if errors:
            ctx.pre_execution_errors = [GraphQLError(message) for message in errors]
        else:
            ctx.pre_execution_errors = self.cached_validate_document(
                ctx.schema._schema, ctx.graphql_document, ctx.validation_rules
            )
        yield


class TokenLimit(MaxTokensLimiter):
    """Refuse documents of more than 2,000 tokens at parse time."""

    def __init__(self) -> None:
        super().__init__(max_token_count=MAX_TOKENS)


class SafeParserCache(ParserCache):
    """ParserCache that leaves syntax errors to Strawberry's own parse step.

    Strawberry's ParserCache parses in the extension hook, outside the error handling of the
    subscription path, so a syntax error in a WebSocket ``subscribe`` killed the worker task
    and the client got only ``complete``. Here a failed cached parse leaves the document
    unset; Strawberry then parses again inside its handler and returns a coded error.
    """

    def on_parse(self) -> Iterator[None]:
        ctx = self.execution_context
        try:
            ctx.graphql_document = self.cached_parse_document(ctx.query, **ctx.parse_options)
        except GraphQLError:
            ctx.graphql_document = None
        yield


@functools.lru_cache(maxsize=512)
def _operations(query: str) -> tuple[tuple[str | None, str], ...]:
    """``(name, operation type)`` of each operation in a document (``()`` if it does not
    parse within the token limit: Strawberry's own parse step reports that)."""
    try:
        doc = parse(query, max_tokens=MAX_TOKENS)
    except GraphQLError:
        return ()
    return tuple(
        (d.name.value if d.name else None, d.operation.value)
        for d in doc.definitions
        if isinstance(d, OperationDefinitionNode)
    )


def http_status_of(error: GraphQLError) -> int | None:
    """HTTP status that an error would map to, or None (internal / unknown)."""
    original = error.original_error
    if isinstance(original, CairnError):
        return original.http_status
    code = (error.extensions or {}).get("code")
    if code in HTTP_STATUS_BY_CODE:
        return HTTP_STATUS_BY_CODE[code]
    cause = getattr(original, "__cause__", None) or getattr(original, "__context__", None)
    if isinstance(cause, CairnError):
        return cause.http_status
    return None


class Envelope(SchemaExtension):
    """Adds ``extensions.envelope`` to every result and maps wholly failed requests to a status."""

    def on_operation(self) -> Iterator[None]:
        yield

    def get_results(self) -> dict:
        ctx = self.execution_context.context
        errors = self.execution_context.pre_execution_errors or []
        result = self.execution_context.result
        if result is not None and getattr(result, "errors", None):
            errors = result.errors
        state = getattr(ctx, "envelope", None)
        if state is None:
            return {}
        if errors and not state.calls:
            state.target = "cairn.graphql"
        env = state.build(had_errors=bool(errors))
        if errors and not state.calls:
            env["status"] = "ERROR"
        data = getattr(result, "data", None) if result is not None else None
        response = getattr(ctx, "response", None)
        if (
            errors
            and isinstance(response, Response)
            and (data is None or all(v is None for v in (data or {}).values()))
        ):
            status = http_status_of(errors[0])
            if status:
                response.status_code = status
                if status == 401:
                    response.headers["www-authenticate"] = 'Bearer realm="cairn"'
                retry = (errors[0].extensions or {}).get("retryAfter")
                if status == 429 and retry is not None:
                    response.headers["retry-after"] = str(retry)
        return {"envelope": env}


class CairnSchema(strawberry.Schema):
    """Strawberry schema that codes every error and logs without query text."""

    async def execute(
        self,
        query,
        variable_values=None,
        context_value=None,
        root_value=None,
        operation_name=None,
        allowed_operation_types=None,
        operation_extensions=None,
    ):
        """Plain (non-streaming) execution: never subscriptions, one operation or a name.

        Strawberry lets a subscription through ``POST /graphql`` (for its multipart
        protocol) where the stream resolver can only fail as an internal error; refusing it
        here makes it a 400 naming the transports that stream. A document with several
        operations and no ``operationName`` is refused as the GraphQL spec requires
        (Strawberry would run the first one, even a mutation).

        Raises:
            HTTPException: a subscription, or several operations and no operation name (400).
        """
        ops = _operations(query) if query else ()
        if operation_name is None and len(ops) > 1:
            raise HTTPException(400, "the document has several operations: send operationName to choose one")
        chosen = [kind for name, kind in ops if operation_name is None or name == operation_name]
        if chosen == ["subscription"]:
            raise HTTPException(
                400,
                "subscriptions stream over the graphql-transport-ws WebSocket at /graphql "
                "(or POST /v1/context-packs/stream as NDJSON), not over a POST request",
            )
        if allowed_operation_types is not None:
            allowed_operation_types = set(allowed_operation_types) - {OperationType.SUBSCRIPTION}
        return await super().execute(
            query,
            variable_values,
            context_value,
            root_value,
            operation_name,
            allowed_operation_types,
            operation_extensions,
        )

    def process_errors(self, errors, execution_context=None) -> None:
        """Give each error an ``extensions.code``; mask unexpected errors; log compactly."""
        trace = getattr(getattr(execution_context, "context", None), "trace_id", None)
        for error in errors:
            ext = dict(error.extensions or {})
            if "code" not in ext:
                original = error.original_error
                if isinstance(original, CairnError):
                    ext.update(original.extensions())
                    error.message = original.message
                elif isinstance(original, GraphQLSyntaxError) or error.message.startswith("Syntax Error"):
                    ext["code"] = "GRAPHQL_PARSE_FAILED"
                elif error.message.startswith("Variable ") or "got invalid value" in error.message:
                    ext["code"] = "BAD_USER_INPUT"
                elif error.path is not None and isinstance(original, GraphQLError) and original.original_error is None:
                    # graphql-core's own argument coercion at execution, e.g. a null variable for
                    # an argument that is non-null with a default ("Argument 'limit' has invalid
                    # value: Expected variable '$b' … not to be None"): the caller's input
                    ext["code"] = "BAD_USER_INPUT"
                    error.message = original.message.split("\n\n")[0]
                elif error.path is None and (
                    original is None
                    or isinstance(original, GraphQLError)
                    or (isinstance(original, ValueError) and error.message.startswith("Expected value of type"))
                ):
                    # request errors found before execution (validation, operation selection; a
                    # scalar refusing a literal: graphql-core keeps its ValueError as the original)
                    ext["code"] = "GRAPHQL_VALIDATION_FAILED"
                else:
                    ext["code"] = "INTERNAL_SERVER_ERROR"
                    log.error("internal error trace_id=%s", trace, exc_info=original)
                    error.message = f"internal error; quote trace id {trace} when reporting it"
                if ext["code"] in ("BAD_USER_INPUT", "GRAPHQL_VALIDATION_FAILED"):
                    field = error_field(error, getattr(execution_context, "graphql_document", None))
                    if field is not None:
                        ext["field"] = field
                error.extensions = ext
            if ext.get("code") == "INTERNAL_SERVER_ERROR":
                continue
            log.info("graphql error code=%s trace_id=%s path=%s", ext.get("code"), trace, error.path)


@strawberry.type
class Query(
    PackQuery,
    ReplayQuery,
    TemporalQuery,
    DocumentQuery,
    IdentityQuery,
    OntologyQuery,
    MemoryQuery,
    DecisionQuery,
    FieldQuery,
    ContextSetQuery,
    TemplateQuery,
    GapQuery,
):
    """Root query."""


@strawberry.type
class Mutation(
    DocumentMutation,
    IdentityMutation,
    OntologyMutation,
    TraceMutation,
    MemoryMutation,
    DecisionMutation,
    FieldMutation,
    ContextSetMutation,
    TemplateMutation,
    GapMutation,
):
    """Root mutation."""


@strawberry.type
class Subscription(PackSubscription):
    """Root subscription."""


def build_schema() -> CairnSchema:
    """Build the schema with its extensions (envelope, limits, parser and validation caches)."""
    return CairnSchema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=[Envelope, TokenLimit, SafeParserCache, LimitedValidation],
        config=StrawberryConfig(scalar_map={datetime.datetime: DateTime}),
    )


schema = build_schema()
