"""One governed helper for the HTTP routes outside GraphQL (the NDJSON pack stream, the Decision API).

:func:`governed_route` turns ``async def handler(call: HttpCall) -> Response`` into a Starlette
endpoint that, in order:

1. builds the :class:`~app.context.RequestContext` (envelope target ``cairn.http``) and appends
   the operation's :class:`~app.governance.CallRecord`;
2. runs the route's own up-front checks (``before``: query parameters, a content type that
   must be refused before anything is read);
3. refuses a declared ``Content-Length`` over ``body_limit`` and reads the body with that limit
   (413 from ``too_large``; 408 when it stalls);
4. authenticates (401/403) before anything is parsed;
5. checks ``Content-Type: application/json`` (415 from ``json_body``), parses the body with
   the package's strict parser (``parse``: repeated keys, ``NaN`` and the like refused) and
   converts it to the package's validated request (``validate``);
6. builds the operation's arguments (``arguments``, which may refuse them) and
   :func:`~app.governance.authorize`\\s the call (scope, rate limit, responsibility boundary),
   recording the boundary;
7. calls the handler.

A request refused in steps 5–6 (after authentication, before the rate limit is checked) counts
one ``reads`` call (:func:`~app.governance.meter_document`, as a GraphQL document refused by
validation does), so a credential cannot send refused bodies unmetered; over the limit it gets
the 429 ``RATE_LIMITED`` instead of the input error.

Steps 2–7 run under the call's trace span (:func:`~app.governance.start_call`; a streamed
body runs after it, under the request's server span), which :func:`~app.governance.log_call` ends.

Any exception becomes the enveloped JSON error (:func:`error_response`: the error's HTTP status,
``extensions.code``, ``Retry-After`` on 429, ``WWW-Authenticate`` on 401). The call is logged
exactly once: here, or — when the handler returns a ``StreamingResponse`` — by the handler's
body iterator in its ``finally``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from cairn.app.context import RequestContext, services_of
from cairn.app.core.errors import CairnError, to_response
from cairn.app.governance import (
    CallRecord,
    Operation,
    Principal,
    authorize,
    get_operation,
    log_call,
    meter_document,
    start_call,
)
from cairn.app.http.errors import BodyTooLarge, UnsupportedMediaType
from cairn.app.http.gate import enveloped_error, read_body
from cairn.app.observability import use


@dataclass(frozen=True)
class HttpCall:
    """What a governed route's handler receives.

    Attributes:
        request: The Starlette request (headers, path parameters).
        ctx: The request context (services, envelope, trace id).
        op: The registry :class:`~app.governance.operation.Operation` (name, coordinate, capability).
        principal: The authorized caller (None only for ``auth="none"`` operations).
        raw: The request body as read (``b""`` when the route reads none).
        body: The parsed JSON body when the route has a parser, else None.
        input: What ``validate`` made of the body (the package's request object), else None.
        arguments: The arguments the call was authorized with.
    """

    request: Request
    ctx: RequestContext
    op: Operation
    principal: Principal | None
    raw: bytes
    body: Any | None
    input: Any
    arguments: dict[str, Any]

    @property
    def record(self) -> CallRecord:
        """The call record of this operation (its status and boundary go in the envelope)."""
        return self.ctx.envelope.calls[-1]

    @property
    def caller(self) -> Principal:
        """The authorized caller of an operation that takes a credential (every route but the
        ``auth="none"`` ones).

        Raises:
            RuntimeError: the operation takes no credential (so there is no caller).
        """
        if self.principal is None:
            raise RuntimeError(f"{self.op.name} takes no credential: it has no caller")
        return self.principal

    @property
    def stream_headers(self) -> dict[str, str]:
        """``x-cairn-trace``, ``x-cairn-coordinate``, ``x-cairn-capability`` (streams and success bodies)."""
        return {
            "x-cairn-trace": self.ctx.trace_id,
            "x-cairn-coordinate": self.op.coordinate,
            "x-cairn-capability": self.op.capability,
        }


Handler = Callable[[HttpCall], Awaitable[Response]]


def error_response(ctx: RequestContext, exc: BaseException, headers: dict[str, str] | None = None) -> JSONResponse:
    """The enveloped JSON error for ``exc`` at its HTTP status (500 when it is not a CairnError).

    Marks the current call REJECTED (401/403) or ERROR. ``headers`` are added to the
    response's (``x-cairn-trace``, ``WWW-Authenticate`` on 401, ``Retry-After`` on 429 and 503 from the
    error's ``retryAfter``).
    """
    status, _ = to_response(exc)
    body, extra = enveloped_error(ctx, exc, status)
    return JSONResponse(body, status_code=status, headers={**extra, **(headers or {})})


def require_json(request: Request, unsupported: Callable[[str], CairnError]) -> None:
    """Refuse a body that is not sent as ``application/json``.

    Args:
        unsupported: Builds the 415 error from the content type sent (``""`` when none).
    """
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise unsupported(ctype)


def default_too_large(limit: int) -> Callable[[str | None], CairnError]:
    """413 ``BodyTooLarge("request body is over N KiB")`` whatever was declared (the NDJSON route's)."""

    def too_large(declared: str | None) -> CairnError:
        return BodyTooLarge(f"request body is over {limit // 1024} KiB", limit=limit)

    return too_large


def default_unsupported(ctype: str) -> CairnError:
    """415 :class:`~app.http.errors.UnsupportedMediaType` naming the content type sent."""
    return UnsupportedMediaType(
        f"content type {ctype or '(none)'!r} is not supported; send the body as application/json"
    )


def governed_route(
    op_name: str,
    *,
    arguments: Callable[[Request, bytes, Any], dict[str, Any]],
    before: Callable[[Request], None] | None = None,
    body_limit: int | None = None,
    too_large: Callable[[str | None], CairnError] | None = None,
    json_body: bool = False,
    unsupported: Callable[[str], CairnError] = default_unsupported,
    parse: Callable[[bytes], Any] | None = None,
    validate: Callable[[Any], Any] | None = None,
    on_error: Callable[[RequestContext, BaseException], Response] | None = None,
) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """Decorate ``async def handler(call: HttpCall) -> Response`` as a governed route (module doc).

    Args:
        op_name: The registry name, e.g. ``"POST /v1/context-packs/stream"`` (KeyError at import
            time when it is not registered).
        arguments: ``(request, raw body, parsed body) -> arguments`` for :func:`authorize`
            (boundaries, confirmation binding); may raise a CairnError to refuse the request
            after authentication (it then counts one ``reads`` call).
        before: Checks run first, before the body is read or the caller authenticated.
        body_limit: Read a body of at most this many bytes (None: read none).
        too_large: Builds the 413 error from the declared ``Content-Length`` (None while
            reading); default :func:`default_too_large`.
        json_body: After authentication the content type must be ``application/json``.
        unsupported: Builds the 415 error from the content type sent (:func:`default_unsupported`).
        parse: The package's strict JSON parser (``bytes -> value``, raising a CairnError).
        validate: ``parsed body -> request object`` (``HttpCall.input``), raising a CairnError;
            runs before the call is authorized (refused input counts one ``reads`` call).
        on_error: Builds the error response of a refused or failed call (default
            :func:`error_response`, the enveloped GraphQL-style error); a route with its own
            wire format (the Decision API) passes its own.
    """
    op = get_operation(op_name)
    if body_limit is not None and too_large is None:
        too_large = default_too_large(body_limit)

    def decorate(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def route(request: Request) -> Response:
            headers = {k.lower(): v for k, v in request.headers.items()}
            ctx = RequestContext(services_of(request.scope), headers, request)
            ctx.envelope.target = "cairn.http"
            record = CallRecord(op.name, op.coordinate, op.capability)
            ctx.envelope.calls.append(record)
            with use(start_call(ctx, record)):  # the call's trace span (no-op with tracing off)
                return await run(request, ctx, record)

        async def run(request: Request, ctx: RequestContext, record: CallRecord) -> Response:
            unmetered = False  # authenticated, not yet at authorize's rate-limit check
            try:
                if before is not None:
                    before(request)
                raw = b""
                if body_limit is not None and too_large is not None:
                    declared = request.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > body_limit:
                        raise too_large(declared)
                    try:
                        raw = await read_body(request.receive, body_limit)
                    except BodyTooLarge:
                        raise too_large(None) from None
                await ctx.principal()  # authenticate before anything is parsed or stored
                unmetered = True
                if json_body:
                    require_json(request, unsupported)
                body = parse(raw) if parse is not None else None
                value = validate(body) if validate is not None else None
                args = arguments(request, raw, body)
                unmetered = False
                principal, boundary = await authorize(ctx, op, args)
                record.boundary = boundary
                response = await handler(HttpCall(request, ctx, op, principal, raw, body, value, args))
            except Exception as exc:  # noqa: BLE001 - shaped into an enveloped error
                if unmetered and isinstance(exc, CairnError):  # refused input counts too (module doc)
                    try:
                        await meter_document(ctx)
                    except CairnError as limited:
                        exc = limited
                response = (on_error or error_response)(ctx, exc)
                log_call(ctx, record)
                return response
            if not isinstance(response, StreamingResponse):
                log_call(ctx, record)  # a stream's body iterator logs when it ends
            return response

        return route

    return decorate
