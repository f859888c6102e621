"""``POST /v1/replays/{replayId}``: replay a pack over plain HTTP (same JSON as the GraphQL
``replay`` query: ``{"mode": "VERIFY"|"RECOMPUTE", "task"?: "…"}``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from cairn.app.http.routes import HttpCall, governed_route
from cairn.app.packs import parse_body
from cairn.app.replay import ReplayRequest, replay_pack, replay_request_from_json, result_json

MAX_REPLAY_BODY_BYTES = 16 * 1024
REPLAY_SHAPE = '{"mode": "VERIFY"|"RECOMPUTE", "task"?: "…"}'


def _arguments(request: Request, raw: bytes, body: Any) -> dict[str, Any]:
    """The body checked strictly (:func:`app.replay.replay_request_from_json`, with the path's
    replay id) and turned into the operation's arguments ``replayId``, ``mode``, ``task``."""
    req = replay_request_from_json(request.path_params["replayId"], body)
    return {"replayId": req.replay_id, "mode": req.mode, "task": req.task}


def make_replay_route() -> Callable[[Request], Any]:
    """The route: body ≤ 16 KiB (413), authentication (401), ``Content-Type: application/json``
    (415 ``BAD_REQUEST``), one strict JSON object ``{mode, task?}`` (400), scope ``replay:run``
    and rate limit (:func:`~app.http.routes.governed_route`), then the replay.

    Errors are enveloped JSON with the error's HTTP status (400, 401, 403, 404, 410, 413, 415);
    the answer is ``{"data": …}`` (:func:`app.replay.result_json`) with the ``x-cairn-*`` headers.
    """

    @governed_route(
        "POST /v1/replays/{replayId}",
        body_limit=MAX_REPLAY_BODY_BYTES,
        json_body=True,
        parse=lambda raw: parse_body(raw, REPLAY_SHAPE),
        arguments=_arguments,
    )
    async def route(call: HttpCall) -> Response:
        req = ReplayRequest(call.arguments["replayId"], call.arguments["mode"], call.arguments["task"])
        result = await replay_pack(call.ctx.services, call.caller, req)
        return JSONResponse({"data": result_json(result)}, headers=call.stream_headers)

    return route
