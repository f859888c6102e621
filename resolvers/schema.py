"""The schema: Query, Mutation, Subscription, plus the envelope, error codes and limits.

Limits, in the order they apply, the same on every transport (``POST``/``GET /graphql``, the
WebSocket, Strawberry's multipart stream: all run :meth:`CairnSchema._prepare_operation_async`
and the extensions below): document ≤ 32,768 characters (before it is lexed); tokens ≤ 2,000
(at parse); operations ≤ 10 and definitions ≤ 50 per document (:mod:`resolvers.document_size`);
then, per operation with fragments expanded in linear time (:mod:`resolvers.limits`),
selections ≤ 10,000, depth ≤ 12, aliases ≤ 30, contextPack ≤ 2, and one response name ≤ 50
times per selection set (:mod:`resolvers.field_repeats`) — all checked *before* graphql-core's
validation rules run, so a refused document costs one linear pass (:class:`LimitedValidation`).
Parse, limit and validation results are cached per document text.

Metering: a document whose selected operation runs no governed root field (only
``__typename`` or introspection, or refused by a limit or by validation) counts one ``reads``
call of its principal (:func:`app.governance.meter_document`), before validation when it
selects no governed field; governed fields count themselves when they run.

Every error leaves with ``extensions.code``: resolver errors carry theirs (the adapter),
parse errors get ``GRAPHQL_PARSE_FAILED``, validation errors ``GRAPHQL_VALIDATION_FAILED``
(variable coercion: ``BAD_USER_INPUT``), anything else ``INTERNAL_SERVER_ERROR`` with its
message replaced (no internals leak). ``extensions.envelope`` is added to every result.
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import strawberry
from cross_web import HTTPException
from graphql import GraphQLError, GraphQLSyntaxError
from graphql.language import DocumentNode
from starlette.responses import Response
from strawberry.extensions import MaxTokensLimiter, ParserCache, SchemaExtension, ValidationCache
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types.execution import ExecutionContext, ExecutionResult, PreExecutionError
from strawberry.types.graphql import OperationType

from cairn.app.context import RequestContext
from cairn.app.core.errors import CairnError
from cairn.resolvers.contextsets import ContextSetMutation, ContextSetQuery
from cairn.resolvers.decisions import DecisionMutation, DecisionQuery
from cairn.resolvers.document_size import (
    MAX_TOKENS,
    cached_parse,
    definition_errors,
    length_error,
    operations_of,
)
from cairn.resolvers.documents import DocumentMutation, DocumentQuery
from cairn.resolvers.field_repeats import repeat_errors
from cairn.resolvers.fields import FieldMutation, FieldQuery
from cairn.resolvers.gaps import GapMutation, GapQuery
from cairn.resolvers.identity import IdentityMutation, IdentityQuery
from cairn.resolvers.input_paths import DateTime, error_field
from cairn.resolvers.interactions import TraceMutation
from cairn.resolvers.limits import MAX_DEPTH, MAX_SELECTIONS, limit_errors
from cairn.resolvers.memory import MemoryMutation, MemoryQuery
from cairn.resolvers.metering import metered, selects_governed_field
from cairn.resolvers.ontology import OntologyMutation, OntologyQuery
from cairn.resolvers.packs import PackQuery, PackSubscription
from cairn.resolvers.replay import ReplayQuery
from cairn.resolvers.templates import TemplateMutation, TemplateQuery
from cairn.resolvers.temporal import TemporalQuery

log = logging.getLogger("cairn.graphql")


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
    """Document limits first, then graphql-core's rules (results cached); metering.

    Strawberry's depth and alias limiters expanded every fragment spread (exponential time
    for nested spreads, ~1 h at n = 30) and ran in the same pass as every other rule. Here
    the count of operations and definitions (:func:`resolvers.document_size.definition_errors`)
    and the linear, memoised measure of :mod:`resolvers.limits` run alone first; a document over
    a limit is refused with ``GRAPHQL_VALIDATION_FAILED`` naming the limit and no other rule
    visits it. Validation rules stay graphql-core's own tuple, so the validation cache keys
    on the same rules every time.

    A document that will run no governed root field is metered here (module doc): before
    validation when its selected operation selects none (so a caller over its limit costs no
    validation), after it when validation refuses it. Over the limit, the answer is the 429.
    """

    # Strawberry runs a hook written as an async generator as it runs a plain one;
    # ValidationCache declares only the plain form
    async def on_validate(self) -> AsyncIterator[None]:  # type: ignore[override]
        ctx = self.execution_context
        document = ctx.graphql_document
        if document is None:  # not parsed: Strawberry validates nothing (the parse error answers)
            yield
            return
        # the name the client sent: ``operation_name`` falls back to the first operation's
        errors = definition_errors(document, ctx._provided_operation_name) or document_limit_errors(document)
        runs_governed = not errors and selects_governed_field(ctx)
        refusal = None if runs_governed else await metered(ctx)
        if refusal is not None:
            ctx.pre_execution_errors = [refusal]
        elif errors:
            ctx.pre_execution_errors = [GraphQLError(message) for message in errors]
        else:
            ctx.pre_execution_errors = self.cached_validate_document(
                ctx.schema._schema, ctx.graphql_document, ctx.validation_rules
            )
            if ctx.pre_execution_errors and runs_governed:  # no field will run to count it
                refusal = await metered(ctx)
                if refusal is not None:
                    ctx.pre_execution_errors = [refusal]
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
    The cache is :data:`cached_parse`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cached_parse_document = cached_parse

    def on_parse(self) -> Iterator[None]:
        ctx = self.execution_context
        try:
            ctx.graphql_document = self.cached_parse_document(ctx.query, **ctx.parse_options)
        except GraphQLError:
            ctx.graphql_document = None
        yield


def http_status_of(error: GraphQLError) -> int | None:
    """HTTP status that an error would map to, or None (internal / unknown)."""
    original = error.original_error
    if isinstance(original, CairnError):
        return original.http_status
    code = (error.extensions or {}).get("code")
    if code in HTTP_STATUS_BY_CODE:
        return HTTP_STATUS_BY_CODE[code]
    cause = (original.__cause__ or original.__context__) if original is not None else None
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
        if result is not None and result.errors:
            errors = result.errors
        if not isinstance(ctx, RequestContext):  # an in-process execute with no request: no envelope
            return {}
        state = ctx.envelope
        if errors and not state.calls:
            state.target = "cairn.graphql"
        env = state.build(had_errors=bool(errors))
        if errors and not state.calls:
            env["status"] = "ERROR"
        data = result.data if result is not None else None
        response = ctx.response
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


def _refused(context: ExecutionContext, error: GraphQLError) -> PreExecutionError:
    """A request refused before execution with ``error`` (also kept for the extensions)."""
    context.pre_execution_errors = [error]
    return PreExecutionError(data=None, errors=[error])


class CairnSchema(strawberry.Schema):
    """Strawberry schema that codes every error and logs without query text."""

    async def execute(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
        operation_extensions: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """Plain (non-streaming) execution: never subscriptions.

        Strawberry lets a subscription through ``POST /graphql`` (for its multipart
        protocol) where the stream resolver can only fail as an internal error; refusing it
        here makes it a 400 naming the transports that stream. (A document with several
        operations and no ``operationName`` is refused by :class:`LimitedValidation`, on every
        transport, as the GraphQL spec requires.)

        Raises:
            HTTPException: a subscription (400).
        """
        ops = operations_of(query) if query else ()
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

    async def _prepare_operation_async(
        self, context: ExecutionContext, extensions_runner: SchemaExtensionsRunner
    ) -> PreExecutionError | None:
        """Refuse a document over :data:`~resolvers.document_size.MAX_DOCUMENT_CHARS` before
        it is lexed, then Strawberry's parse, operation-type check and validation; meter what
        stops before validation.

        The one step every async path takes (``execute`` for ``POST``/``GET``, ``stream`` for
        the WebSocket and multipart): a parse-time extension cannot refuse with a coded error
        on the streaming path (an exception there ends the WebSocket task), whereas a
        ``PreExecutionError`` returned here is answered like any validation error. A document
        refused here — too long, a syntax error, an unknown ``operationName``, an operation
        type the transport does not allow — reaches no validation hook, so it is metered here
        (:func:`resolvers.metering.metered`); over the caller's limit the answer is the 429.
        Strawberry 0.341.2 (pinned): the front-door tests go through this private method.
        """
        message = length_error(context.query) if context.query else None
        if message is not None:
            return _refused(context, await metered(context) or GraphQLError(message))
        try:
            result = await super()._prepare_operation_async(context, extensions_runner)
        except (CannotGetOperationTypeError, InvalidOperationTypeError):
            refusal = await metered(context)
            if refusal is None:
                raise
            return _refused(context, refusal)
        if result is not None and context.graphql_document is None:  # a syntax error
            refusal = await metered(context)
            if refusal is not None:
                return _refused(context, refusal)
        return result

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        """Give each error an ``extensions.code``; mask unexpected errors; log compactly."""
        context = execution_context.context if execution_context is not None else None
        trace = context.trace_id if isinstance(context, RequestContext) else None
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
                    document = execution_context.graphql_document if execution_context is not None else None
                    field = error_field(error, document)
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
