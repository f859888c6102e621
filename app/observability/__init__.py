"""Observability: OpenTelemetry traces and Prometheus metrics, both off by default and cheap when off.

- Traces (:mod:`app.observability.tracing`): on when the standard ``OTEL_*`` environment names an
  exporter (:func:`configure_from_env`, called by ``create_app``); spans for each HTTP request
  (continuing the caller's ``traceparent``: :class:`TraceMiddleware`), each governed call
  (:func:`start_operation`/:func:`end_operation`, from the governance adapter), the pack's legs
  and stages, SQL statements (:func:`instrument_engine`) and the decision judge.
  Cairn's envelope trace id equals ``trace_<OTEL trace id>`` (:func:`current_trace_id`).
- Metrics (:mod:`app.observability.metrics`): :class:`Telemetry` (``services.telemetry``) records
  governed calls, pack stage timings and ingest counts when ``CAIRN_METRICS`` is on; ``GET
  /metrics`` serves them, summed over the processes of ``serve --workers N``
  (:func:`multiprocess_dir_for`).

Public surface: other packages import only the names below (import-linter contract). This
package imports nothing of Cairn but :mod:`app.core`.
"""

from cairn.app.observability.asgi import TraceMiddleware, instrument_engine
from cairn.app.observability.metrics import CHANNELS, MULTIPROCESS_DIR_ENV, Metrics, Telemetry, multiprocess_dir_for
from cairn.app.observability.tracing import (
    TracingConfigError,
    configure_from_env,
    current_trace_id,
    enabled,
    end_operation,
    install,
    seeded,
    set_attributes,
    span,
    start_operation,
    use,
)

__all__ = [
    "CHANNELS",
    "MULTIPROCESS_DIR_ENV",
    "Metrics",
    "Telemetry",
    "TraceMiddleware",
    "TracingConfigError",
    "configure_from_env",
    "current_trace_id",
    "enabled",
    "end_operation",
    "install",
    "instrument_engine",
    "multiprocess_dir_for",
    "seeded",
    "set_attributes",
    "span",
    "start_operation",
    "use",
]
