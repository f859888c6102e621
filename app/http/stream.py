"""``POST /v1/context-packs/stream``: a context pack as NDJSON (header, items, footer)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.context import RequestContext, Services
from app.core.errors import CairnError
from app.governance import CallRecord, authorize, get_operation, log_call, to_graphql_error
from app.http.errors import BodyTooLarge, UnsupportedMediaType
from app.http.gate import enveloped_error, read_body
from app.packs import event_json, parse_body, request_from_json, stream_pack

MAX_STREAM_BODY_BYTES = 64 * 1024


def _envelope_error(ctx: RequestContext, exc: BaseException) -> JSONResponse:
    status = exc.http_status if isinstance(exc, CairnError) else 500
    body, headers = enveloped_error(ctx, exc, status)
    return JSONResponse(body, status_code=status, headers=headers)


def make_stream_route(services: Services):
    """``POST /v1/context-packs/stream``: the pack as NDJSON (one JSON object per line).

    Errors before the first line are ordinary enveloped JSON errors with an HTTP status;
    trace, coordinate and capability travel in ``x-cairn-*`` response headers. A client
    that disconnects cancels the work.
    """
    op = get_operation("POST /v1/context-packs/stream")

    async def route(request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        ctx = RequestContext(services, headers, request)
        ctx.envelope.target = "cairn.http"
        ctx.envelope.calls.append(CallRecord(op.name, op.coordinate, op.capability))
        try:
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_STREAM_BODY_BYTES:
                raise BodyTooLarge("request body is over 64 KiB", limit=MAX_STREAM_BODY_BYTES)
            raw = await read_body(request.receive, MAX_STREAM_BODY_BYTES)
            await ctx.principal()  # authenticate before parsing anything
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                raise UnsupportedMediaType(
                    f"content type {ctype or '(none)'!r} is not supported; send the body as application/json"
                )
            body = parse_body(raw)
            req = request_from_json(body)
            principal, boundary = await authorize(ctx, op, {"input": body})
            ctx.envelope.calls[-1].boundary = boundary
            events = stream_pack(services, principal, req, trace_id=ctx.trace_id)
            first = await anext(events)
        except Exception as exc:  # noqa: BLE001 - shaped into an enveloped error
            response = _envelope_error(ctx, exc)
            log_call(ctx, ctx.envelope.calls[-1])
            return response

        async def body_iter() -> AsyncIterator[bytes]:
            try:
                yield _line(first, op)
                async for event in events:
                    yield _line(event, op)
            except Exception as exc:  # noqa: BLE001 - after the first line: an error line
                err = to_graphql_error(ctx, exc)
                yield (json.dumps({"type": "error", **err.formatted}, ensure_ascii=False) + "\n").encode()
            finally:
                await events.aclose()
                log_call(ctx, ctx.envelope.calls[-1])

        return StreamingResponse(
            body_iter(),
            media_type="application/x-ndjson",
            headers={
                "x-cairn-trace": ctx.trace_id,
                "x-cairn-coordinate": op.coordinate,
                "x-cairn-capability": op.capability,
            },
        )

    return route


def _line(event, op) -> bytes:
    return (
        json.dumps(event_json(event, coordinate=op.coordinate, capability=op.capability), ensure_ascii=False) + "\n"
    ).encode("utf-8")
