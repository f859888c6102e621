"""OpenTelemetry traces: off unless the standard ``OTEL_*`` environment asks for them.

Cairn uses the OpenTelemetry *API* everywhere and installs the *SDK* (a ``TracerProvider`` with
exporters) only when :func:`configure_from_env` finds one of:

- ``OTEL_TRACES_EXPORTER`` = a comma list of ``otlp`` | ``console`` (``none`` = off);
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (implies ``otlp``).

``OTEL_SDK_DISABLED=true`` turns everything off. The rest is read by the SDK itself:
``OTEL_SERVICE_NAME`` (default here ``cairn``), ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER``/``_ARG``, ``OTEL_BSP_*`` (batching), ``OTEL_EXPORTER_OTLP_*``
(headers, timeout, compression). The OTLP exporter is OTLP over HTTP/protobuf
(``opentelemetry-exporter-otlp-proto-http``, port 4318); ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``
is refused at start-up with that reason (the gRPC exporter is not installed).

Off (the default), :func:`span` returns one shared no-op context manager: no span objects, no
context switches — the cost is one global read per call (bench/observability.py measures it).

Trace ids: a request's server span continues the caller's W3C ``traceparent``; Cairn's envelope
trace id is then ``trace_<the OTEL trace id>`` (:func:`current_trace_id`, read by
:func:`app.governance.trace_id_from_headers`). A root span that Cairn starts itself (no
``traceparent``: a WebSocket operation, an MCP stdio call, a request with
``x-cairn-trace: trace_<32 hex>``) takes its OTEL trace id from Cairn's trace id
(:func:`seeded`), so the two agree there too. Only an ``x-cairn-trace`` that is not 32 hex
digits cannot be an OTEL id: every operation span carries ``cairn.trace_id``, which links them.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

TRACER_NAME = "cairn"
_HEX32 = re.compile(r"^trace_([0-9a-f]{32})$")

_state: dict[str, Any] = {"enabled": False, "provider": None}
_seed: contextvars.ContextVar[int | None] = contextvars.ContextVar("cairn_trace_seed", default=None)


class TracingConfigError(ValueError):
    """The ``OTEL_*`` environment asks for something this install cannot do (message names the variable)."""


def enabled() -> bool:
    """True once an SDK tracer provider was installed by :func:`install` (process-wide)."""
    return bool(_state["enabled"])


def exporters_from_env(env: Mapping[str, str]) -> list[str]:
    """The exporter names the environment asks for (``[]`` = tracing off; module doc).

    Raises:
        TracingConfigError: an unknown exporter, or an OTLP protocol other than HTTP/protobuf.
    """
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    if not names and (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        names = ["otlp"]
    if "none" in names:
        return []
    unknown = [n for n in names if n not in ("otlp", "console")]
    if unknown:
        raise TracingConfigError(f"OTEL_TRACES_EXPORTER={unknown[0]!r} is not supported; use otlp, console or none")
    protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip()
    if "otlp" in names and protocol not in ("", "http/protobuf"):
        raise TracingConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: Cairn ships the OTLP HTTP/protobuf "
            "exporter (port 4318); set http/protobuf or leave it unset"
        )
    return names


def configure_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Install the SDK when the ``OTEL_*`` environment asks for traces (module doc); idempotent.

    Args:
        env: The environment (default ``os.environ``).

    Returns:
        Whether tracing is on afterwards.

    Raises:
        TracingConfigError: an exporter or protocol this install does not provide.
    """
    if enabled():
        return True
    names = exporters_from_env(os.environ if env is None else env)
    if not names:
        return False
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    processors: list[Any] = []
    for name in names:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            processors.append(BatchSpanProcessor(OTLPSpanExporter()))
        else:
            processors.append(BatchSpanProcessor(ConsoleSpanExporter()))
    install(*processors)
    return True


def _seeded_ids() -> Any:
    """The SDK's random id generator, except that a root span's trace id is the one
    :func:`seeded` set, when set (the SDK is imported only when tracing is turned on)."""
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class SeededIds(RandomIdGenerator):
        def generate_trace_id(self) -> int:
            seed = _seed.get()
            return seed if seed is not None else super().generate_trace_id()

    return SeededIds()


def install(*processors: Any) -> Any:
    """Install an SDK ``TracerProvider`` with ``processors`` as the process's provider.

    Used by :func:`configure_from_env`, and by tests with the SDK's own
    ``SimpleSpanProcessor(InMemorySpanExporter())``. The resource is ``Resource.create()``
    (reads ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``), ``service.name`` defaulting to
    ``cairn``. OpenTelemetry allows one global provider per process: a second call adds its
    processors to the installed provider.

    Returns:
        The SDK ``TracerProvider``.
    """
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = _state["provider"]
    if provider is None:
        attrs = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "cairn"}
        provider = TracerProvider(resource=Resource.create(attrs), id_generator=_seeded_ids())
        trace.set_tracer_provider(provider)
        _state["provider"] = provider
    for p in processors:
        provider.add_span_processor(p)
    _state["enabled"] = True
    return provider


def tracer() -> trace.Tracer:
    """Cairn's tracer (the installed provider's; a no-op tracer when tracing is off)."""
    return trace.get_tracer(TRACER_NAME)


_NOOP = contextlib.nullcontext(None)


def span(name: str, attributes: Mapping[str, Any] | None = None, *, kind: SpanKind = SpanKind.INTERNAL) -> Any:
    """A context manager: a child span of the current one named ``name`` (tracing on), else a
    shared no-op (``as`` gives None then). Exceptions escaping it are recorded and mark the
    span ERROR (the SDK's default)."""
    if not _state["enabled"]:
        return _NOOP
    return tracer().start_as_current_span(name, attributes=dict(attributes or {}), kind=kind)


def set_attributes(target: Span | None, attributes: Mapping[str, Any]) -> None:
    """Set attributes on ``target`` (a span from :func:`span`; None when tracing is off)."""
    if target is not None:
        target.set_attributes({k: v for k, v in attributes.items() if v is not None})


def current_trace_id() -> str | None:
    """``trace_<32 hex>`` of the current span when tracing is on and one is active, else None."""
    if not _state["enabled"]:
        return None
    ctx = trace.get_current_span().get_span_context()
    return f"trace_{ctx.trace_id:032x}" if ctx.is_valid else None


@contextlib.contextmanager
def seeded(cairn_trace_id: str) -> Iterator[None]:
    """While open, a new *root* span's OTEL trace id is ``cairn_trace_id``'s 32 hex digits
    (when it has that form; otherwise random as usual)."""
    m = _HEX32.match(cairn_trace_id)
    token = _seed.set(int(m.group(1), 16) if m and int(m.group(1), 16) else None)
    try:
        yield
    finally:
        _seed.reset(token)


def start_operation(name: str, attributes: Mapping[str, Any], cairn_trace_id: str) -> Span | None:
    """Start (not enter) the span of one governed call: a child of the current span, or a root
    whose trace id is Cairn's (:func:`seeded`). None when tracing is off.

    The caller makes it current with :func:`use` while the call runs and ends it with
    :func:`end_operation` (once, where the call is logged).
    """
    if not _state["enabled"]:
        return None
    with seeded(cairn_trace_id):
        return tracer().start_span(
            name, attributes={**attributes, "cairn.trace_id": cairn_trace_id}, kind=SpanKind.INTERNAL
        )


def use(target: Span | None) -> Any:
    """Make ``target`` the current span while the block runs (a no-op for None)."""
    if target is None:
        return _NOOP
    return trace.use_span(target, end_on_exit=False, record_exception=False, set_status_on_exception=False)


def end_operation(target: Span | None, *, status: str, code: str, seconds: float | None) -> None:
    """Close an operation span with Cairn's envelope status and error code (ERROR status unless OK)."""
    if target is None:
        return
    target.set_attribute("cairn.status", status)
    target.set_attribute("cairn.code", code)
    if status != "OK":
        target.set_status(Status(StatusCode.ERROR, code))
    target.end()
