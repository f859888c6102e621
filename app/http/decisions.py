"""HTTP routes of the Decision API (SPEC §8): ``POST /api/v1/decisions``, ``GET /api/v1/decisions/{id}``.

``POST`` checks, in order: no query parameters (400), ``Content-Type: application/json``
(415), body ≤ 1 MiB by ``Content-Length`` and while reading (413), authentication (401/403),
the ``Idempotency-Key`` header (400 ``invalid_decision_input``), scope ``decisions:run`` and
responsibility boundaries (403), then :meth:`~app.decisions.service.DecisionRunner.create`
(which parses and validates the raw body itself, so duplicate keys, ``NaN`` and the like
are seen).

Both routes speak the original Decisions API's wire format (seeds/003; the mapping is
:mod:`app.decisions.wire`): the request's ``session_id`` and ``type: choice | score``.
Success: 200 with the decision object (``{id, session_id, source, status, questions,
answers, context, error, created_at, completed_at, judge, judge_runs}``, ``status``
``completed`` | ``failed`` | ``running``) plus ``extensions.envelope``.
Errors: ``{"type": "error", "request_id", "error": {"type", "code", "message",
"decision_id"?, "field"?, "limit"?}, "extensions": {"envelope"}}`` with the SPEC HTTP status
(``decision_id`` for failures after acceptance and ``decision_in_progress``);
``Retry-After`` on 429. A replay for an Idempotency-Key carries ``Idempotency-Replayed: true``
and the original status and body (stored in the internal form, converted on the way out).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from cairn.app.context import RequestContext
from cairn.app.core.errors import CairnError, to_response
from cairn.app.core.text_rules import validate_identifier
from cairn.app.decisions import (
    MAX_BODY_BYTES,
    WIRE,
    DecisionBodyTooLarge,
    DecisionInputError,
    DecisionUnsupportedMediaType,
    body_sha256,
    decision_to_wire,
    error_to_wire,
    parse_body,
    validate_idempotency_key,
    validate_request,
)
from cairn.app.http.gate import enveloped_error
from cairn.app.http.routes import HttpCall, governed_route, require_json

_REPLAYED = {"idempotency-replayed": "true"}


def _ok(call: HttpCall, decision: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        {**decision_to_wire(decision), "extensions": {"envelope": call.ctx.envelope.build()}},
        headers={**call.stream_headers, **(headers or {})},
    )


def wire_error(ctx: RequestContext, exc: BaseException, headers: dict[str, str] | None = None) -> JSONResponse:
    """The wire-format error response (:func:`app.decisions.wire.error_to_wire`) at the error's status.

    Same status and headers as the enveloped error (``Retry-After`` on 429, ``WWW-Authenticate``
    on 401, ``x-cairn-trace``); ``request_id`` is the trace id; the envelope stays in
    ``extensions.envelope``.
    """
    status, _ = to_response(exc)
    body, extra = enveloped_error(ctx, exc, status)
    err = body["errors"][0]
    wire = error_to_wire(status, err["message"], dict(err.get("extensions") or {}), ctx.trace_id)
    wire["extensions"] = body["extensions"]
    return JSONResponse(wire, status_code=status, headers={**extra, **(headers or {})})


def _unsupported(ctype: str) -> CairnError:
    return DecisionUnsupportedMediaType(
        f"Content-Type must be application/json (got {ctype or 'none'!r})", field="Content-Type"
    )


def _create_checks(request: Request) -> None:
    """Before anything is read: no query parameters (400), a JSON content type (415)."""
    if request.url.query:
        raise DecisionInputError("this API takes no query parameters; send everything in the JSON body", field="query")
    require_json(request, _unsupported)


def _too_large(declared: str | None) -> CairnError:
    if declared is not None:
        return DecisionBodyTooLarge(
            f"request body is {declared} bytes; at most {MAX_BODY_BYTES} (1 MiB)", field="body", limit=MAX_BODY_BYTES
        )
    return DecisionBodyTooLarge(
        f"request body is over {MAX_BODY_BYTES} bytes (1 MiB)", field="body", limit=MAX_BODY_BYTES
    )


def _create_arguments(request: Request, raw: bytes, body: Any) -> dict[str, Any]:
    """The Idempotency-Key is checked before the rate limit counts the call; the body is bound by its hash."""
    validate_idempotency_key(request.headers.getlist("idempotency-key"))
    return {"bodySha256": body_sha256(raw)}


def make_create_route() -> Callable[[Request], Awaitable[Response]]:
    """``POST /api/v1/decisions`` (see module doc)."""

    @governed_route(
        "POST /api/v1/decisions",
        before=_create_checks,
        body_limit=MAX_BODY_BYTES,
        too_large=_too_large,
        arguments=_create_arguments,
        on_error=wire_error,
    )
    async def route(call: HttpCall) -> Response:
        key = validate_idempotency_key(call.request.headers.getlist("idempotency-key"))  # checked already
        outcome = await call.ctx.services.decisions.create(
            call.caller,
            prepare=lambda: validate_request(parse_body(call.raw), WIRE),
            sha=call.arguments["bodySha256"],
            key=key,
            source="api",
        )
        replayed = _REPLAYED if outcome.replayed else None
        if outcome.error is not None:
            return wire_error(call.ctx, outcome.error, replayed)
        return _ok(call, outcome.decision or {}, replayed)

    return route


def _read_checks(request: Request) -> None:
    if request.url.query:
        raise DecisionInputError("this API takes no query parameters", field="query")


def _read_arguments(request: Request, raw: bytes, body: Any) -> dict[str, Any]:
    decision_id = request.path_params["decision_id"]
    validate_identifier(decision_id, "id", error=DecisionInputError)
    return {"id": decision_id}


def make_read_route() -> Callable[[Request], Awaitable[Response]]:
    """``GET /api/v1/decisions/{decision_id}``: 200 with the decision (``FAILED`` ones too) or 404."""

    @governed_route(
        "GET /api/v1/decisions/{decision_id}",
        before=_read_checks,
        arguments=_read_arguments,
        on_error=wire_error,
    )
    async def route(call: HttpCall) -> Response:
        return _ok(call, await call.ctx.services.decisions.get(call.caller, call.arguments["id"]))

    return route
