"""``POST /v1/replays/{replayId}``: replay a pack over plain HTTP (same JSON as the GraphQL
``replay`` query: ``{"mode": "VERIFY"|"RECOMPUTE", "task"?: "…"}``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.context import RequestContext, Services
from app.core.errors import CairnError
from app.governance import CallRecord, authorize, get_operation, log_call
from app.http.gate import BodyTooLarge, enveloped_error, read_body
from app.packs import parse_body
from app.replay import replay_pack, replay_request_from_json, result_json

MAX_REPLAY_BODY_BYTES = 16 * 1024


def make_replay_route(get_services):
    """The route handler: authenticate, parse strictly, authorize (scope ``replay:run``), replay.

    Errors are enveloped JSON with the error's HTTP status (400, 401, 403, 404, 410, 413, 415).
    """
    op = get_operation("POST /v1/replays/{replayId}")

    async def route(request: Request) -> Response:
        services: Services = get_services()
        headers = {k.lower(): v for k, v in request.headers.items()}
        ctx = RequestContext(services, headers, request)
        ctx.envelope.target = "cairn.http"
        ctx.envelope.calls.append(CallRecord(op.name, op.coordinate, op.capability))
        try:
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_REPLAY_BODY_BYTES:
                raise BodyTooLarge("request body is over 16 KiB", limit=MAX_REPLAY_BODY_BYTES)
            raw = await read_body(request.receive, MAX_REPLAY_BODY_BYTES)
            await ctx.principal()  # authenticate before parsing anything
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                raise CairnError(
                    f"content type {ctype or '(none)'!r} is not supported; send the body as application/json",
                    code="BAD_REQUEST",
                    http_status=415,
                )
            req = replay_request_from_json(request.path_params["replayId"], parse_body(raw))
            principal, boundary = await authorize(
                ctx, op, {"replayId": req.replay_id, "mode": req.mode, "task": req.task}
            )
            ctx.envelope.calls[-1].boundary = boundary
            result = await replay_pack(services, principal, req)
            response: Response = JSONResponse(
                {"data": result_json(result)},
                headers={
                    "x-cairn-trace": ctx.trace_id,
                    "x-cairn-coordinate": op.coordinate,
                    "x-cairn-capability": op.capability,
                },
            )
        except Exception as exc:  # noqa: BLE001 - shaped into an enveloped error
            status = exc.http_status if isinstance(exc, CairnError) else 500
            body, hdrs = enveloped_error(ctx, exc, status)
            response = JSONResponse(body, status_code=status, headers=hdrs)
        log_call(ctx, ctx.envelope.calls[-1])
        return response

    return route
