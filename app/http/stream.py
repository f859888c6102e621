"""``POST /v1/context-packs/stream``: a context pack as NDJSON (header, items, footer)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from cairn.app.governance import Operation, log_call, mark_failed, to_graphql_error
from cairn.app.http.routes import HttpCall, governed_route
from cairn.app.observability import use
from cairn.app.packs import event_json, parse_body, request_from_json, stream_pack

MAX_STREAM_BODY_BYTES = 64 * 1024


def make_stream_route() -> Callable[[Request], Awaitable[Response]]:
    """``POST /v1/context-packs/stream``: the pack as NDJSON (one JSON object per line).

    Checks (:func:`~app.http.routes.governed_route`): body ≤ 64 KiB (413), authentication,
    ``Content-Type: application/json`` (415 ``BAD_REQUEST``), one strict JSON object of the
    ``ContextPackInput`` shape (400), scope, rate limit and boundaries. Errors before the first
    line are ordinary enveloped JSON errors with an HTTP status; after it, one
    ``{"type": "error", …}`` line ends the stream. Trace, coordinate and capability travel in
    ``x-cairn-*`` response headers. A client that disconnects cancels the work.
    """

    @governed_route(
        "POST /v1/context-packs/stream",
        body_limit=MAX_STREAM_BODY_BYTES,
        json_body=True,
        parse=parse_body,
        validate=request_from_json,
        arguments=lambda request, raw, body: {"input": body},
    )
    async def route(call: HttpCall) -> Response:
        ctx, op = call.ctx, call.op
        # stream_pack is an async generator function (closed below); app.packs declares it AsyncIterator
        events = cast(
            AsyncGenerator[Any, None], stream_pack(ctx.services, call.caller, call.input, trace_id=ctx.trace_id)
        )
        first = await anext(events)

        async def body_iter() -> AsyncIterator[bytes]:
            try:
                with use(call.record.span):  # the rest of the pack runs under the call's span
                    yield _line(first, op)
                    async for event in events:
                        yield _line(event, op)
            except Exception as exc:  # noqa: BLE001 - after the first line: an error line
                mark_failed(call.record, exc)
                err = to_graphql_error(ctx, exc)
                yield (json.dumps({"type": "error", **err.formatted}, ensure_ascii=False) + "\n").encode()
            finally:
                await events.aclose()
                log_call(ctx, call.record)

        return StreamingResponse(body_iter(), media_type="application/x-ndjson", headers=call.stream_headers)

    return route


def _line(event: Any, op: Operation) -> bytes:
    """One NDJSON line; ``event``: an ``app.packs`` pack event (``PackEvent`` is not on the
    package's public surface, so it is not named here)."""
    return (
        json.dumps(event_json(event, coordinate=op.coordinate, capability=op.capability), ensure_ascii=False) + "\n"
    ).encode("utf-8")
