"""``WS /graphql`` (graphql-transport-ws): per operation, a context, authentication and an envelope.

Strawberry's handler shares one context per connection, so every operation on a socket
wrote its calls into one envelope (a success after an error reported ``ERROR`` and listed
the earlier calls), and it parsed and validated a document before any resolver — hence
before any credential check — so an unauthenticated socket was served introspection and
"Did you mean …" suggestions that HTTP refuses. :class:`CairnTransportWS` changes three things:

1. **One context per operation** (:meth:`app.context.RequestContext.for_operation`): its own
   envelope, timer and authentication, with the credential sent in ``connection_init``'s
   payload (``{"Authorization": "Bearer …"}``).
2. **Authentication before the document is looked at**, as ``POST /graphql`` does: an
   operation without a valid credential gets an ``error`` message coded
   ``UNAUTHENTICATED`` (or ``AGENT_CREDENTIAL_REVOKED``, ``AGENT_BROWSER_REQUEST_REFUSED`` …),
   envelope status ``REJECTED``, and its document is neither parsed nor validated.
   ``connection_init`` itself is always acknowledged: clients (Apollo, ``graphql-ws``)
   handle a coded ``UNAUTHENTICATED`` error per operation the same way over HTTP and
   WebSocket, whereas a ``4403`` close carries no code or envelope and ``graphql-ws``
   clients retry it; and since the credential is checked per operation, one revoked
   while the socket is open stops working at the next operation.
3. **An envelope on every message**: ``next`` payloads carry ``extensions.envelope``
   (the schema's envelope extension, now per operation) and every error of an ``error``
   message carries ``extensions.envelope`` (the protocol's ``error`` payload is a bare list
   of errors, with no room for a top-level ``extensions``).

One refusal happens before the protocol starts (:func:`refuse_agent_browser_handshake`): a
handshake that carries an agent credential in its ``Authorization`` header together with
browser headers (``Origin``, ``Sec-Fetch-*``) is answered 403 ``AGENT_BROWSER_REQUEST_REFUSED``,
as HTTP routes answer it, instead of being upgraded. A credential sent only in
``connection_init``'s payload is judged per operation (point 2) by the same rule
(:func:`app.governance.agent_token_from_browser`) against the handshake's headers.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, cast

from starlette.websockets import WebSocket
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler, Operation
from strawberry.subscriptions.protocols.graphql_transport_ws.types import Message

from cairn.app.context import RequestContext
from cairn.app.core.errors import CairnError
from cairn.app.governance import (
    CallRecord,
    agent_token_from_browser,
    bearer_from_headers,
    browser_refused,
    get_operation,
    log_call,
    mark_failed,
    to_graphql_error,
)
from cairn.app.http.edges import deny_websocket

_operation_context: ContextVar[RequestContext | None] = ContextVar("cairn_ws_operation", default=None)
"""The context of the operation whose task is running (each operation runs in its own task)."""


class CairnTransportWS(BaseGraphQLTransportWSHandler):
    """Strawberry's graphql-transport-ws handler with the changes of the module doc.

    ``self.context`` is the connection's context in the connection's task (where
    ``connection_init`` stores its payload) and the operation's own context inside an
    operation's task, so Strawberry's operation code runs unchanged on the right context.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refused_ids: set[str] = set()
        """Operations whose ``next`` was sent as an ``error`` (their ``complete`` is dropped)."""

    @property
    def context(self) -> Any:
        """The running operation's context, else the connection's."""
        return _operation_context.get() or self._connection_context

    @context.setter
    def context(self, value: Any) -> None:
        self._connection_context = value

    async def run_operation(self, operation: Operation[Any, Any]) -> None:
        """Authenticate with a fresh per-operation context, then run the operation on it."""
        ctx = self._connection_context.for_operation()
        _operation_context.set(ctx)  # this task's copy of the context only
        try:
            await ctx.principal()
        except Exception as exc:  # noqa: BLE001 - shaped into the operation's error message
            op = get_operation("WS /graphql")
            record = CallRecord(op.name, op.coordinate, op.capability)
            mark_failed(
                record, exc, "REJECTED" if isinstance(exc, CairnError) and exc.http_status in (401, 403) else "ERROR"
            )
            ctx.envelope.calls.append(record)
            log_call(ctx, record)
            error = to_graphql_error(ctx, exc)
            await operation.send_operation_message({"id": operation.id, "type": "error", "payload": [error.formatted]})
            return
        await super().run_operation(operation)

    @staticmethod
    def _get_pre_execution_close_reason(error: Any) -> str | None:
        """Never close the socket for one operation's document: a syntax error or an
        unselectable operation becomes that operation's coded ``error`` message (Strawberry
        closed the whole connection with 4400, losing every other operation on it)."""
        return None

    async def send_message(self, message: Message) -> None:
        """Send, giving each error of an ``error`` message the operation's envelope.

        A ``next`` whose result is only a refusal (:func:`_refused_errors`: no data, every
        error coded ``RATE_LIMITED``) is sent as that operation's ``error`` message instead,
        and its ``complete`` is dropped: a governed field refused by the rate limit then
        arrives as a document refused before execution does (docs/api.md "Rate limits")."""
        # read and rebuilt as a plain dict: the protocol's TypedDicts differ by "type"
        out = cast(dict[str, Any], message)
        refused = _refused_errors(out)
        if refused is not None:
            self._refused_ids.add(out["id"])
            out = {"id": out["id"], "type": "error", "payload": refused}
        elif out.get("type") == "complete" and out.get("id") in self._refused_ids:
            self._refused_ids.discard(out["id"])  # the protocol ends an operation at its error
            return
        if out.get("type") == "error" and isinstance(out.get("payload"), list):
            ctx = _operation_context.get() or self._connection_context.for_operation()
            envelope = ctx.envelope.build(had_errors=True)
            out = {**out, "payload": [_with_envelope(err, envelope) for err in out["payload"]]}
        await super().send_message(cast(Message, out))


def _refused_errors(message: dict[str, Any]) -> list[Any] | None:
    """The errors of a ``next`` message that carries nothing but rate-limit refusals (every
    error ``RATE_LIMITED``, and no root field with a value), else None."""
    payload = message.get("payload")
    if message.get("type") != "next" or not isinstance(payload, dict) or not payload.get("errors"):
        return None
    data = payload.get("data")
    if isinstance(data, dict) and any(value is not None for value in data.values()):
        return None
    errors = payload["errors"]
    if not all(isinstance(e, dict) and (e.get("extensions") or {}).get("code") == "RATE_LIMITED" for e in errors):
        return None
    return [{k: v for k, v in e.items() if k != "extensions"} | {"extensions": _without_envelope(e)} for e in errors]


def _without_envelope(error: dict[str, Any]) -> dict[str, Any]:
    """An error's extensions without an envelope (``send_message`` adds the operation's)."""
    return {k: v for k, v in (error.get("extensions") or {}).items() if k != "envelope"}


def _with_envelope(error: Any, envelope: dict[str, Any]) -> Any:
    if not isinstance(error, dict):
        return error
    extensions = dict(error.get("extensions") or {})
    extensions.setdefault("code", "BAD_REQUEST")  # the handler's own errors (e.g. the subscription limit)
    extensions.setdefault("envelope", envelope)
    return {**error, "extensions": extensions}


async def refuse_agent_browser_handshake(websocket: WebSocket) -> bool:
    """Deny a handshake whose ``Authorization`` header holds an agent credential sent with
    browser headers: an enveloped 403 ``AGENT_BROWSER_REQUEST_REFUSED`` (module doc).

    Returns:
        True when the handshake was denied (nothing more to do), False when it may go on (no
        header credential, a member token, no browser headers; a malformed ``Authorization``
        header goes on to be refused per operation as ``UNAUTHENTICATED``).
    """
    headers = {k.lower(): v for k, v in websocket.headers.items()}
    try:
        token = bearer_from_headers(headers)
    except CairnError:
        return False
    if not agent_token_from_browser(token, headers):
        return False
    op = get_operation("WS /graphql")
    await deny_websocket(websocket, browser_refused(), 403, record=CallRecord(op.name, op.coordinate, op.capability))
    return True
