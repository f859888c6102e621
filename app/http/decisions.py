"""HTTP routes of the Decision API (SPEC §8): ``POST /api/v1/decisions``, ``GET /api/v1/decisions/{id}``.

``POST`` checks, in order: no query parameters (400), ``Content-Type: application/json``
(415), body ≤ 1 MiB by ``Content-Length`` and while reading (413), authentication (401/403),
the ``Idempotency-Key`` header (400 ``invalid_decision_input``), scope ``decisions:run`` and
responsibility boundaries (403), then :meth:`~app.decisions.service.DecisionRunner.create`
(which parses and validates the raw body itself, so duplicate keys, ``NaN`` and the like
are seen).

Success: 200 with the decision object (``{id, sessionId, source, status, questions,
answers, context, error, createdAt, completedAt, …}``) plus ``extensions.envelope``.
Errors: the enveloped Cairn error (``errors[0].extensions.code`` is the SPEC code, e.g.
``invalid_decision_input``; ``decisionId`` for failures after acceptance), with the SPEC
HTTP status; ``Retry-After`` on 429. A replay for an Idempotency-Key carries
``Idempotency-Replayed: true`` and the original status and body.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.context import RequestContext, Services
from app.core.errors import CairnError
from app.core.text_rules import validate_identifier
from app.decisions import (
    MAX_BODY_BYTES,
    DecisionBodyTooLarge,
    DecisionInputError,
    DecisionUnsupportedMediaType,
    body_sha256,
    parse_body,
    validate_idempotency_key,
    validate_request,
)
from app.governance import CallRecord, authorize, get_operation, log_call
from app.http.errors import BodyTooLarge
from app.http.gate import enveloped_error, read_body


def _error(ctx: RequestContext, exc: BaseException, replayed: bool = False) -> JSONResponse:
    status = exc.http_status if isinstance(exc, CairnError) else 500
    body, headers = enveloped_error(ctx, exc, status)
    if replayed:
        headers["idempotency-replayed"] = "true"
    return JSONResponse(body, status_code=status, headers=headers)


def _ok(ctx: RequestContext, op, decision: dict[str, Any], replayed: bool = False) -> JSONResponse:
    headers = {"x-cairn-trace": ctx.trace_id, "x-cairn-coordinate": op.coordinate, "x-cairn-capability": op.capability}
    if replayed:
        headers["idempotency-replayed"] = "true"
    return JSONResponse({**decision, "extensions": {"envelope": ctx.envelope.build()}}, headers=headers)


def _context(services: Services, request: Request, op) -> RequestContext:
    headers = {k.lower(): v for k, v in request.headers.items()}
    ctx = RequestContext(services, headers, request)
    ctx.envelope.target = "cairn.http"
    ctx.envelope.calls.append(CallRecord(op.name, op.coordinate, op.capability))
    return ctx


def make_create_route(get_services):
    """``POST /api/v1/decisions`` (see module doc)."""
    op = get_operation("POST /api/v1/decisions")

    async def route(request: Request) -> Response:
        services: Services = get_services()
        ctx = _context(services, request, op)
        try:
            if request.url.query:
                raise DecisionInputError(
                    "this API takes no query parameters; send everything in the JSON body", field="query"
                )
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                raise DecisionUnsupportedMediaType(
                    f"Content-Type must be application/json (got {ctype or 'none'!r})", field="Content-Type"
                )
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                raise DecisionBodyTooLarge(
                    f"request body is {declared} bytes; at most {MAX_BODY_BYTES} (1 MiB)",
                    field="body",
                    limit=MAX_BODY_BYTES,
                )
            try:
                raw = await read_body(request.receive, MAX_BODY_BYTES)
            except BodyTooLarge:
                raise DecisionBodyTooLarge(
                    f"request body is over {MAX_BODY_BYTES} bytes (1 MiB)", field="body", limit=MAX_BODY_BYTES
                ) from None
            await ctx.principal()  # authenticate before anything is parsed or stored
            key = validate_idempotency_key(request.headers.getlist("idempotency-key"))
            sha = body_sha256(raw)
            principal, boundary = await authorize(ctx, op, {"bodySha256": sha})
            ctx.envelope.calls[-1].boundary = boundary
        except Exception as exc:  # noqa: BLE001 - shaped into an enveloped error
            response = _error(ctx, exc)
            log_call(ctx, ctx.envelope.calls[-1])
            return response
        outcome = await services.decisions.create(
            principal, prepare=lambda: validate_request(parse_body(raw)), sha=sha, key=key, source="api"
        )
        if outcome.error is not None:
            response = _error(ctx, outcome.error, outcome.replayed)
        else:
            response = _ok(ctx, op, outcome.decision or {}, outcome.replayed)
        log_call(ctx, ctx.envelope.calls[-1])
        return response

    return route


def make_read_route(get_services):
    """``GET /api/v1/decisions/{decision_id}``: 200 with the decision (``FAILED`` ones too) or 404."""
    op = get_operation("GET /api/v1/decisions/{decision_id}")

    async def route(request: Request) -> Response:
        services: Services = get_services()
        ctx = _context(services, request, op)
        try:
            if request.url.query:
                raise DecisionInputError("this API takes no query parameters", field="query")
            decision_id = request.path_params["decision_id"]
            await ctx.principal()
            validate_identifier(decision_id, "id", error=DecisionInputError)
            principal, boundary = await authorize(ctx, op, {"id": decision_id})
            ctx.envelope.calls[-1].boundary = boundary
            decision = await services.decisions.get(principal, decision_id)
            response = _ok(ctx, op, decision)
        except Exception as exc:  # noqa: BLE001 - shaped into an enveloped error
            response = _error(ctx, exc)
        log_call(ctx, ctx.envelope.calls[-1])
        return response

    return route
