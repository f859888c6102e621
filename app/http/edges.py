"""Enveloped errors for what no route handles: unknown routes, wrong methods, CORS preflight
refusals, refused WebSocket handshakes and unexpected server errors.

Starlette answers these itself with plain text (``Not Found``, ``Method Not Allowed``,
``Disallowed CORS origin``, a bare 403 for a refused handshake, ``Internal Server Error``).
Here each becomes the same JSON error body as every other Cairn error — ``{data: null,
errors: [{message, extensions: {code}}], extensions: {envelope}}`` — with the
``x-cairn-trace`` header:

- 404 ``NOT_FOUND`` (unknown route, unknown static file; the message lists the app's routes,
  :func:`served_routes`), 405 ``METHOD_NOT_ALLOWED`` (with
  ``Allow``), other Starlette HTTP errors ``BAD_REQUEST``; a wrong method on the Decision API
  (``/api/v1/decisions…``) is answered in that API's wire format instead (405
  ``method_not_allowed``, :func:`app.decisions.error_to_wire`);
- 403 ``FORBIDDEN`` for a refused CORS preflight (naming the origin or method refused);
- a refused WebSocket handshake is answered with an HTTP response carrying that body (the
  ASGI WebSocket Denial Response extension, which uvicorn implements; on a server without
  it the handshake is closed as before): 403 ``FORBIDDEN`` for a cross-origin handshake,
  404 ``NOT_FOUND`` for a WebSocket path that does not exist;
- 500 ``INTERNAL_SERVER_ERROR`` (message: the trace id to quote; details only in the log), or
  for an outage its coded 503 (``STORAGE_FULL``, ``DATABASE_UNAVAILABLE``) with ``Retry-After``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from cairn.app.core.errors import CairnError, Forbidden, NotFound, as_cairn_error, error_class
from cairn.app.decisions import DecisionMethodNotAllowed, error_to_wire
from cairn.app.governance import CallRecord, EnvelopeState, mark_failed, trace_id_from_headers

log = logging.getLogger("cairn.http")

_CODE_BY_STATUS = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 403: "FORBIDDEN"}


def code_for_status(status: int) -> str:
    """The ``extensions.code`` for an HTTP error status that carries no code of its own."""
    if status >= 500:
        return "INTERNAL_SERVER_ERROR"
    return _CODE_BY_STATUS.get(status, "BAD_REQUEST")


def enveloped_json(
    headers: Mapping[str, str],
    exc: CairnError,
    status: int,
    *,
    record: CallRecord | None = None,
    extra_headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A JSON error response with ``extensions.envelope`` and ``x-cairn-trace``.

    Args:
        headers: The request headers, lower-case names (for the caller's trace id).
        exc: The error; its ``code`` and extras become ``errors[0].extensions``.
        status: HTTP status.
        record: The operation the request reached, if any (its coordinate and capability go
            in the envelope); none for an unknown route.
        extra_headers: More response headers (``Allow``, CORS headers).
    """
    state = EnvelopeState(trace_id=trace_id_from_headers(dict(headers)), target="cairn.http")
    if record is not None:
        mark_failed(record, exc, "REJECTED" if status in (401, 403) else "ERROR")
        state.calls.append(record)
    envelope = state.build(had_errors=True)
    if record is None and status in (401, 403):
        envelope["status"] = "REJECTED"
    body = {
        "data": None,
        "errors": [{"message": exc.message, "extensions": exc.extensions()}],
        "extensions": {"envelope": envelope},
    }
    return JSONResponse(body, status_code=status, headers={**(extra_headers or {}), "x-cairn-trace": state.trace_id})


def _headers(request: Request | WebSocket) -> dict[str, str]:
    return {k.lower(): v for k, v in request.headers.items()}


def served_routes(routes: Sequence[BaseRoute]) -> list[str]:
    """What a 404 lists, from the app's own routes so it cannot drift from them: ``METHODS
    path`` of each route in the order served (``GET|POST /graphql``, ``WS /graphql``,
    ``POST /mcp``, …; ``HEAD`` left out); mounted static files are not listed."""
    listed: list[str] = []
    for route in routes:
        if isinstance(route, Route):
            methods = "|".join(sorted(m for m in route.methods or () if m != "HEAD"))
            listed.append(f"{methods} {route.path}")
        elif isinstance(route, WebSocketRoute):
            listed.append(f"WS {route.path}")
    return listed


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    """Starlette's own HTTP errors (404 unknown route, 405 wrong method, …) as enveloped JSON."""
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    method, path = request.method, request.url.path
    if status == 404:
        message = f"no route {method} {path}; Cairn serves {', '.join(served_routes(request.app.routes))}"
    elif status == 405:
        allowed = (exc.headers or {}).get("Allow") or (exc.headers or {}).get("allow") or ""
        message = f"{method} is not allowed on {path}; use {allowed or 'another method'}"
        if path == "/api/v1/decisions" or path.startswith("/api/v1/decisions/"):
            return _decisions_wire(request, DecisionMethodNotAllowed(message), exc.headers)
    else:
        message = exc.detail
    return enveloped_json(
        _headers(request), error_class(code_for_status(status), status)(message), status, extra_headers=exc.headers
    )


def _decisions_wire(request: Request, exc: CairnError, extra_headers: Mapping[str, str] | None) -> Response:
    """An edge error on the Decision API's paths in its wire format (``{"type": "error",
    "request_id", "error": {type, code, message}}``), the envelope in ``extensions``."""
    state = EnvelopeState(trace_id=trace_id_from_headers(_headers(request)), target="cairn.http")
    body = error_to_wire(exc.http_status, exc.message, exc.extensions(), state.trace_id)
    body["extensions"] = {"envelope": state.build(had_errors=True)}
    headers = {**(extra_headers or {}), "x-cairn-trace": state.trace_id}
    return JSONResponse(body, status_code=exc.http_status, headers=headers)


async def server_error_handler(request: Request, exc: Exception) -> Response:
    """An unhandled exception: 500 with the trace id to quote; the details go to the log only.
    An outage (full disk, database down; :mod:`app.core.outages`) is its coded 503 with ``Retry-After``."""
    trace = trace_id_from_headers(_headers(request))
    known = as_cairn_error(exc)
    if known is not None:
        log.warning("%s trace_id=%s: %s", known.code, trace, exc)
        retry = known.extra.get("retryAfter")
        return enveloped_json(
            {"x-cairn-trace": trace},
            known,
            known.http_status,
            extra_headers={"retry-after": str(retry)} if retry is not None and known.http_status == 503 else None,
        )
    log.error("unhandled error trace_id=%s", trace, exc_info=exc)
    return enveloped_json(
        {"x-cairn-trace": trace},
        CairnError(f"internal error; quote trace id {trace} when reporting it"),  # INTERNAL_SERVER_ERROR
        500,
    )


EXCEPTION_HANDLERS = {HTTPException: http_exception_handler, Exception: server_error_handler}
"""Pass to ``Starlette(exception_handlers=…)``."""


class EnvelopedCORSMiddleware(CORSMiddleware):
    """Starlette's CORS middleware whose refused preflights are enveloped 403 ``FORBIDDEN``
    errors naming what was refused (Starlette: plain-text 400 ``Disallowed CORS origin``)."""

    def preflight_response(self, request_headers: Headers) -> Response:
        """Starlette's answer, or an enveloped 403 when it refused the preflight."""
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        origin = request_headers["origin"]
        method = request_headers["access-control-request-method"]
        reasons = []
        if not self.is_allowed_origin(origin=origin):
            reasons.append(f"origin {origin!r} is not allowed (set CAIRN_CORS_ORIGINS)")
        if method not in self.allow_methods:
            reasons.append(f"method {method!r} is not allowed (allowed: {', '.join(sorted(self.allow_methods))})")
        if not reasons:
            reasons.append(bytes(response.body).decode("utf-8", "replace"))
        keep = {k: v for k, v in response.headers.items() if k.lower() not in ("content-length", "content-type")}
        return enveloped_json(
            dict(request_headers),
            Forbidden("CORS preflight refused: " + "; ".join(reasons)),
            403,
            extra_headers=keep,
        )


async def deny_websocket(
    websocket: WebSocket, exc: CairnError, status: int, *, record: CallRecord | None = None
) -> None:
    """Refuse a WebSocket handshake with an enveloped JSON HTTP response (see module doc)."""
    response = enveloped_json(_headers(websocket), exc, status, record=record)
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=1008, reason=exc.message[:120])


async def route_not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """The router's fallback (``app.router.default``): an HTTP request to an unknown route
    raises 404 for :func:`http_exception_handler`; a WebSocket handshake to any path but
    ``/graphql`` is denied with an enveloped 404 ``NOT_FOUND``."""
    if scope["type"] != "websocket":
        raise HTTPException(status_code=404)
    websocket = WebSocket(scope, receive, send)
    await deny_websocket(
        websocket,
        NotFound(
            f"no WebSocket endpoint at {websocket.url.path}; GraphQL subscriptions use /graphql (graphql-transport-ws)"
        ),
        404,
    )
