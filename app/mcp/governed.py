"""The one governed-call path of MCP tools.

A tool call goes through the steps of the GraphQL ``Governed`` extension and of the HTTP
``governed_route`` helper, with the same governance functions (:mod:`app.governance`): a call
record in a fresh envelope, structural checks of the arguments, then
:func:`~app.governance.authorize` (authentication, scope, the creator's current role, the
tool's input validation, the credential's rate limit, responsibility boundaries), the
handler, the envelope status of a failure (:func:`~app.governance.status_of`), its code from the
one error mapper (:func:`~app.core.errors.to_response`, through
:func:`~app.governance.to_graphql_error`), and one :func:`~app.governance.log_call` line.
Only the result shape is MCP's own (``governed_route`` answers with a Starlette response,
``Governed`` with a GraphQL value). Every outcome is a
``CallToolResult``: success carries ``structuredContent`` (and the same JSON as text);
a refusal or failure has ``isError`` and ``structuredContent.error`` = ``{message, code,
field, limit, traceId, …}`` with the GraphQL error's ``extensions`` (same codes). The
envelope travels in ``_meta["cairn/envelope"]``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from mcp import types

from cairn.app.context import RequestContext, Services
from cairn.app.core.errors import CairnError, Unauthenticated
from cairn.app.governance import (
    CallRecord,
    Principal,
    RateLimited,
    authorize,
    get_operation,
    log_call,
    mark_failed,
    meter_document,
    start_call,
    to_graphql_error,
)
from cairn.app.observability import use

CONFIRMATION_META = "cairn/confirmation"
"""``_meta`` key of a tool call carrying a boundary confirmation token (stdio has no headers;
over HTTP the ``X-Cairn-Confirmation`` header works too)."""

ENVELOPE_META = "cairn/envelope"
"""``_meta`` key of every tool result: the call's envelope (trace id, coordinate, capability,
status, boundary)."""


def _json_default(value: Any) -> Any:
    """Datetimes as ISO-8601 (as the NDJSON stream writes them); anything else as ``str``."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _json_text(value: dict[str, Any]) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=json.dumps(value, ensure_ascii=False, default=_json_default))]


async def count_refusal(ctx: RequestContext) -> None:
    """Count a tool call refused before :func:`~app.governance.authorize` (an unknown tool, a
    structural check) as one ``reads`` call (:func:`~app.governance.meter_document`, as a
    GraphQL document refused by validation), so refused calls are not free.

    Raises:
        RateLimited: over the ``reads`` limit (it replaces the refusal).
    Other failures (no valid credential) leave the caller's refusal standing, as the checks
    run before authentication."""
    try:
        await meter_document(ctx)
    except RateLimited:
        raise
    except CairnError:
        return


def error_payload(ctx: RequestContext, exc: BaseException) -> dict[str, Any]:
    """``{"error": {message, code, field, limit, …, traceId}}`` for any exception: the
    ``extensions`` of :func:`~app.core.errors.to_response` (the one mapper, so the same code as
    the GraphQL and HTTP channels); no stack traces (an internal error is logged with the trace id)."""
    err = to_graphql_error(ctx, exc)
    return {"error": {"message": err.message, **(err.extensions or {}), "traceId": ctx.trace_id}}


def _in_argument_terms(payload: dict[str, Any], own_field: Callable[[str], str]) -> dict[str, Any]:
    """``payload`` (:func:`error_payload`) with its ``field`` as a path in the tool's arguments
    (also in the message where it quotes the field); a new dict."""
    error = payload["error"]
    field = error.get("field")
    if not isinstance(field, str) or own_field(field) == field:
        return payload
    own = own_field(field)
    return {"error": {**error, "field": own, "message": str(error["message"]).replace(field, own)}}


async def governed_call(
    services: Services,
    *,
    op_name: str,
    headers: dict[str, str],
    request: Any,
    arguments: dict[str, Any],
    check: Callable[[dict[str, Any]], None],
    prepare: Callable[[dict[str, Any]], Any],
    run: Callable[[RequestContext, Principal, Any], Awaitable[dict[str, Any]]],
    confirmation: str | None = None,
    own_field: Callable[[str], str] = str,
) -> types.CallToolResult:
    """Run one tool call through the governance path (module doc).

    Args:
        op_name: The registry name (``mcp.<tool>``).
        headers: Lower-case request headers (stdio: a synthesised ``authorization``).
        request: The Starlette request (HTTP) or None (stdio).
        arguments: The tool arguments as sent.
        check: Structural checks that precede authentication (as GraphQL's type checks do);
            raises ``BadInput``.
        prepare: The tool's validation (run by ``authorize`` after scope checks, as GraphQL's
            ``validate`` hooks are); returns the validated request handed to ``run``.
        run: ``(ctx, principal, request) -> structured result`` (``ctx.services``, ``ctx.trace_id``).
        confirmation: A boundary confirmation token sent with the call.
        own_field: A refusal's ``field`` (a GraphQL input path) → the path in the tool's
            arguments (:meth:`app.mcp.spec.ToolSpec.own_field`), also where the message quotes it.
    """
    op = get_operation(op_name)
    ctx = RequestContext(services, headers, request)
    ctx.envelope.target = "cairn.mcp"
    if confirmation is not None:
        ctx.connection_params = {"confirmation": confirmation}
    record = CallRecord(op.name, op.coordinate, op.capability)
    ctx.envelope.calls.append(record)
    with use(start_call(ctx, record)):  # the call's trace span (no-op with tracing off)
        return await _run_governed(ctx, op, record, arguments, check, prepare, run, own_field)


async def _run_governed(
    ctx: RequestContext,
    op: Any,
    record: CallRecord,
    arguments: dict[str, Any],
    check: Callable[[dict[str, Any]], None],
    prepare: Callable[[dict[str, Any]], Any],
    run: Callable[[RequestContext, Principal, Any], Awaitable[dict[str, Any]]],
    own_field: Callable[[str], str],
) -> types.CallToolResult:
    """The body of :func:`governed_call` under the call's trace span."""
    prepared: dict[str, Any] = {}

    def validate(input: dict[str, Any]) -> None:
        prepared["request"] = prepare(input)

    try:
        try:
            check(arguments)
        except CairnError:
            await count_refusal(ctx)  # over the limit: RateLimited replaces the input error
            raise
        principal, boundary = await authorize(ctx, op, {"input": arguments}, validate)
        record.boundary = boundary
        if principal is None:  # pragma: no cover - every MCP tool needs a credential
            raise Unauthenticated("tool operations need a credential")
        result = json.loads(json.dumps(await run(ctx, principal, prepared["request"]), default=_json_default))
    except Exception as exc:  # noqa: BLE001 - every failure becomes a coded error result
        mark_failed(record, exc)
        if isinstance(exc, CairnError) and "boundary" in exc.extra:
            record.boundary = exc.extra["boundary"]
        payload = _in_argument_terms(error_payload(ctx, exc), own_field)
        log_call(ctx, record)
        return types.CallToolResult(
            content=_json_text(payload),
            structuredContent=payload,
            isError=True,
            _meta={ENVELOPE_META: ctx.envelope.build()},
        )
    log_call(ctx, record)
    return types.CallToolResult(
        content=_json_text(result),
        structuredContent=result,
        isError=False,
        _meta={ENVELOPE_META: ctx.envelope.build()},
    )
