"""The server span of each HTTP request (ASGI middleware) and SQL statement spans.

:class:`TraceMiddleware` wraps the whole app. With tracing off it passes every request straight
through (one flag read). With tracing on, for each HTTP request it extracts the W3C
``traceparent``/``tracestate`` (the global propagator) and runs the request inside a SERVER span
``METHOD /route/template`` with ``http.request.method``, ``url.path``, ``http.route`` and
``http.response.status_code`` (ERROR status from 500). Without a ``traceparent``, an
``x-cairn-trace: trace_<32 hex>`` seeds the new trace's id. WebSocket connections get no
server span (one would last as long as the connection): each operation on them starts its
own root span (:func:`app.observability.tracing.start_operation`).

:func:`instrument_engine` adds a CLIENT span per SQL statement (``db.system``,
``db.operation``, ``db.statement`` without parameter values) to an SQLAlchemy engine.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import propagate
from opentelemetry.trace import SpanKind, Status, StatusCode

from cairn.app.observability import tracing


def _route_template(scope: dict[str, Any]) -> str | None:
    """The matched route's path template (``/api/v1/decisions/{decision_id}``), when known."""
    app = scope.get("app")
    router = getattr(app, "router", None)
    for route in getattr(router, "routes", ()):
        try:
            match, _ = route.matches(scope)
        except Exception:  # noqa: BLE001 - a route that cannot match this scope
            continue
        if match.name == "FULL":
            path = getattr(route, "path", None)
            return f"{path}/{{path}}" if route.__class__.__name__ == "Mount" else path
    return None


class TraceMiddleware:
    """ASGI middleware: a SERVER span per HTTP request when tracing is on (module doc)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not tracing.enabled():
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        parent = propagate.extract(headers)
        method = scope.get("method", "GET")
        path = scope.get("path", "")
        route = _route_template(scope) or path
        status: dict[str, int] = {}

        async def send_wrapper(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        attributes = {"http.request.method": method, "url.path": path, "http.route": route}
        with (
            tracing.seeded(headers.get("x-cairn-trace", "").strip()),
            tracing.tracer().start_as_current_span(
                f"{method} {route}", context=parent, kind=SpanKind.SERVER, attributes=attributes
            ) as span,
        ):
            try:
                await self.app(scope, receive, send_wrapper)
            finally:
                code = status.get("code", 500)
                span.set_attribute("http.response.status_code", code)
                if code >= 500:
                    span.set_status(Status(StatusCode.ERROR, f"HTTP {code}"))


def instrument_engine(engine: Any) -> None:
    """Add a CLIENT span per SQL statement to ``engine`` (an async or sync SQLAlchemy engine).

    Listeners on ``before/after_cursor_execute`` and ``handle_error``; the statement text is
    recorded as sent (bound parameters stay ``?``/``$1``: no values), cut at 2,000 characters.
    Attach only when tracing is on (:func:`app.observability.tracing.enabled`).
    """
    from sqlalchemy import event

    sync = getattr(engine, "sync_engine", engine)
    system = sync.dialect.name

    @event.listens_for(sync, "before_cursor_execute")
    def _before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        operation = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
        span = tracing.tracer().start_span(
            f"{operation} {system}",
            kind=SpanKind.CLIENT,
            attributes={"db.system": system, "db.operation": operation, "db.statement": statement[:2000]},
        )
        conn.info.setdefault("cairn_spans", []).append(span)

    @event.listens_for(sync, "after_cursor_execute")
    def _after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        spans = conn.info.get("cairn_spans")
        if spans:
            spans.pop().end()

    @event.listens_for(sync, "handle_error")
    def _error(exception_context: Any) -> None:
        conn = exception_context.connection
        spans = conn.info.get("cairn_spans") if conn is not None else None
        if spans:
            span = spans.pop()
            span.record_exception(exception_context.original_exception)
            span.set_status(Status(StatusCode.ERROR, type(exception_context.original_exception).__name__))
            span.end()
