"""The HTTP gate in front of ``/graphql``: size limit, body shape and authentication first.

Strawberry parses and validates a document before any resolver (and so before the adapter)
runs; a large document costs CPU even without a credential. The gate therefore, for
``POST /graphql`` and ``GET /graphql?query=…``:

1. refuses bodies over 256 KiB (``413``, by ``Content-Length`` and while reading);
2. requires one UTF-8 JSON object (``400 BAD_REQUEST``; batches are refused);
3. authenticates the bearer token *before* parsing (``401``/``403`` with the SPEC codes),
   handing the principal on to the request context;
4. turns Strawberry's plain-text HTTP errors (missing query, unsupported method, unknown
   operation name) into enveloped JSON errors with a code.

The GraphiQL page (``GET /graphql`` from a browser, no query) passes through; ``HEAD`` of it
gets GET's status and headers without the body.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cairn.app.context import RequestContext, services_of
from cairn.app.core.errors import as_cairn_error, error_class, to_response
from cairn.app.governance import CallRecord, get_operation, log_call, mark_failed, to_graphql_error
from cairn.app.http.edges import code_for_status
from cairn.app.http.errors import BadRequest, BodyTooLarge, RequestTimeout, UnsupportedMediaType

MAX_GRAPHQL_BODY_BYTES = 256 * 1024

BODY_TIMEOUT_SECONDS = 30.0
"""A request body must arrive completely within this time (a stalled upload holds a
connection and its buffer: the slow-body attack)."""


async def read_body(receive: Receive, limit: int, timeout: float = BODY_TIMEOUT_SECONDS) -> bytes:
    """Read an HTTP request body, refusing it as soon as it passes ``limit`` bytes.

    Raises:
        BodyTooLarge: more than ``limit`` bytes.
        RequestTimeout: 408 ``REQUEST_TIMEOUT`` when the body has not arrived within ``timeout`` s.
    """
    try:
        async with asyncio.timeout(timeout):
            return await _read_body(receive, limit)
    except TimeoutError:
        raise RequestTimeout(f"the request body did not arrive within {timeout:.0f} s", limit=timeout) from None


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        body = message.get("body", b"")
        size += len(body)
        if size > limit:
            raise BodyTooLarge(f"request body is over {limit // 1024} KiB", limit=limit)
        chunks.append(body)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def enveloped_error(
    ctx: RequestContext, exc: BaseException, status: int | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The body and headers of an enveloped JSON error; marks the current call REJECTED/ERROR.

    ``status`` defaults to the error's own (:func:`~app.core.errors.to_response`). Headers: ``x-cairn-trace``; ``WWW-Authenticate`` on 401; ``Retry-After`` (the error's
    ``extensions.retryAfter``, whole seconds) on 429 and 503 (an outage: full disk, database down).
    """
    if status is None:
        status, _ = to_response(exc)
    err = to_graphql_error(ctx, exc)
    if ctx.envelope.calls:
        mark_failed(ctx.envelope.calls[-1], exc, "REJECTED" if status in (401, 403) else "ERROR")
    body = {"data": None, "errors": [err.formatted], "extensions": {"envelope": ctx.envelope.build(had_errors=True)}}
    headers = {"x-cairn-trace": ctx.trace_id}
    if status == 401:
        headers["www-authenticate"] = 'Bearer realm="cairn"'
    retry = (err.extensions or {}).get("retryAfter")
    if status in (429, 503) and retry is not None:
        headers["retry-after"] = str(retry)
    return body, headers


async def send_error(send: Send, ctx: RequestContext, exc: BaseException, status: int) -> None:
    """Send one enveloped JSON error response (raw ASGI)."""
    body, extra = enveloped_error(ctx, exc, status)
    payload = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        *((k.encode(), v.encode()) for k, v in extra.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class GraphQLGate:
    """ASGI wrapper around the Strawberry view (see module doc).

    Args:
        view: The Strawberry ASGI view.

    The process's :class:`~app.context.Services` come from the app's state
    (:func:`app.context.services_of`).
    """

    def __init__(self, view: ASGIApp) -> None:
        self.view = view

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        ctx = RequestContext(services_of(scope), headers)
        is_query_get = scope["method"] == "GET" and b"query=" in scope.get("query_string", b"")
        if scope["method"] == "HEAD" and b"query=" not in scope.get("query_string", b""):
            # HEAD of the GraphiQL page, as on /healthz and /console: GET's status and headers, no body
            await self.view({**scope, "method": "GET"}, receive, _EnvelopingSend(_without_body(send), ctx))
            return
        if scope["method"] not in ("POST", "GET") or not (scope["method"] == "POST" or is_query_get):
            # the GraphiQL page (or Strawberry's plain-text refusal, enveloped)
            await self.view(scope, receive, _EnvelopingSend(send, ctx))
            return
        op = get_operation("POST /graphql")
        ctx.envelope.calls.append(CallRecord(op.name, op.coordinate, op.capability))
        body = b""
        try:
            if scope["method"] == "POST":
                declared = headers.get("content-length")
                if declared and declared.isdigit() and int(declared) > MAX_GRAPHQL_BODY_BYTES:
                    raise BodyTooLarge(
                        f"request body is over {MAX_GRAPHQL_BODY_BYTES // 1024} KiB", limit=MAX_GRAPHQL_BODY_BYTES
                    )
                body = await read_body(receive, MAX_GRAPHQL_BODY_BYTES)
                _check_shape(body, headers)
            else:
                _check_query_string(scope.get("query_string", b""))
            principal = await ctx.principal()
        except Exception as exc:  # noqa: BLE001 - shaped below
            known = as_cairn_error(exc)  # a database outage while authenticating: 503, not 400
            status = known.http_status if known is not None else 400
            await send_error(send, ctx, exc, status)
            log_call(ctx, ctx.envelope.calls[-1])  # a refusal at the gate is a call of POST /graphql
            return
        scope.setdefault("state", {})["cairn_principal"] = principal
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if scope["method"] == "POST" and not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.view(scope, replay, _EnvelopingSend(send, ctx))


def _check_query_string(raw: bytes) -> None:
    """GET /graphql: the query string is ASCII and every parameter percent-decodes to UTF-8.

    Raises:
        BadRequest: Otherwise — as a POST body of invalid UTF-8 is refused, where the GET path
            used to turn each bad byte into U+FFFD silently.
    """
    try:
        if not raw.isascii():
            raise UnicodeDecodeError("ascii", raw, 0, 1, "raw bytes outside ASCII")
        parse_qsl(raw.decode("ascii"), keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise BadRequest(
            "the query string must be ASCII with percent-encoded UTF-8 (query=…&variables=…)", field="query"
        ) from None


def _check_shape(body: bytes, headers: dict[str, str]) -> None:
    """One UTF-8 JSON object with a string ``query`` (form/multipart bodies are refused)."""
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ("application/json", "application/graphql-response+json", ""):
        raise UnsupportedMediaType(f"content type {ctype!r} is not supported; send application/json")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadRequest("the body must be one UTF-8 JSON object {query, variables?, operationName?}") from None
    if isinstance(data, list):
        raise BadRequest("batched requests are not supported; send one operation per request")
    if not isinstance(data, dict) or not isinstance(data.get("query"), str) or not data["query"].strip():
        raise BadRequest("the body must be a JSON object with a non-empty string 'query'", field="query")
    if data.get("variables") is not None and not isinstance(data["variables"], dict):
        raise BadRequest("'variables' must be a JSON object", field="variables")


def _without_body(send: Send) -> Send:
    """An ASGI ``send`` passing a response's start (status, headers with GET's content-length)
    and an empty last body message: what a HEAD request gets (RFC 9110 §9.3.2)."""

    async def head_send(message: Message) -> None:
        if message["type"] == "http.response.body":
            if not message.get("more_body", False):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await send(message)

    return head_send


class _EnvelopingSend:
    """Rewrites Strawberry's plain-text 4xx responses as enveloped JSON errors."""

    def __init__(self, send: Send, ctx: RequestContext) -> None:
        self.send = send
        self.ctx = ctx
        self.status: int | None = None
        self.plain = False
        self.buffer: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            ctype = dict(message.get("headers", [])).get(b"content-type", b"")
            self.status = message["status"]
            self.plain = self.status >= 400 and ctype.startswith(b"text/plain")
            if not self.plain:
                await self.send(message)
            return
        if message["type"] == "http.response.body" and self.plain:
            self.buffer.append(message.get("body", b""))
            if not message.get("more_body", False):
                text = b"".join(self.buffer).decode("utf-8", "replace")
                status = self.status or 400
                await send_error(self.send, self.ctx, error_class(code_for_status(status), status)(text), status)
            return
        await self.send(message)
