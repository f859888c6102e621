"""Envelope (``cairn.envelope.v1``) and trace ids.

Every response carries ``extensions.envelope`` = ``{protocol, id, traceId, issuedAt, source,
target, coordinate, capability, status, boundary}``. A caller's W3C ``traceparent``
(``00-<32 hex trace id>-<16 hex>-<2 hex>``) or ``x-cairn-trace`` (``trace_<1–64 of
[A-Za-z0-9_-]>``) is carried through; otherwise a new ``trace_<32 hex>`` is made.
Streams put trace, coordinate and capability in HTTP headers (``x-cairn-trace``,
``x-cairn-coordinate``, ``x-cairn-capability``) or the subscription's first message.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from cairn.app.core.ids import new_id, utcnow
from cairn.app.observability import current_trace_id

PROTOCOL = "cairn.envelope.v1"
SOURCE = "cairn"

_TRACEPARENT_RE = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_CAIRN_TRACE_RE = re.compile(r"^trace_[A-Za-z0-9_-]{1,64}$")


def trace_id_from_headers(headers: dict[str, str]) -> str:
    """The trace id for a request: ``x-cairn-trace``, else ``traceparent``, else a new one.

    With tracing on, "``traceparent``" is read as the current OpenTelemetry span's trace id:
    the request's server span continued the header (same id) or began a new trace, so the
    envelope's id and the exported trace's id are one (:mod:`app.observability.tracing`).

    Malformed values are not trusted (a new id is made) — a trace header is advisory and
    must never fail a request.
    """
    cairn = headers.get("x-cairn-trace", "").strip()
    if _CAIRN_TRACE_RE.match(cairn):
        return cairn
    current = current_trace_id()  # tracing on: the request's span continued the traceparent
    if current is not None:
        return current
    m = _TRACEPARENT_RE.match(headers.get("traceparent", "").strip().lower())
    if m and m.group(1) != "0" * 32:
        return f"trace_{m.group(1)}"
    return f"trace_{secrets.token_hex(16)}"


@dataclass
class CallRecord:
    """What the adapter recorded about one operation of a request."""

    operation: str
    coordinate: str
    capability: str
    status: str = "OK"  # OK | ERROR | REJECTED
    boundary: dict[str, Any] | None = None
    code: str = "OK"  # OK, or the failure's extensions.code (metrics label; set by mark_failed)
    span: Any = field(default=None, repr=False, compare=False)  # the call's trace span (tracing on)


@dataclass
class EnvelopeState:
    """Per-request envelope facts, filled by the adapter, read when the response is built."""

    trace_id: str
    target: str = "cairn.graphql"
    calls: list[CallRecord] = field(default_factory=list)

    def build(self, *, had_errors: bool = False) -> dict[str, Any]:
        """The envelope object for the response.

        Status: ``REJECTED`` if any call was rejected by auth or a boundary, else ``ERROR`` if
        any call or the request failed, else ``OK``. Coordinate and capability are the first
        call's (a multi-field request lists every call under ``operations``).
        """
        statuses = [c.status for c in self.calls]
        if "REJECTED" in statuses:
            status = "REJECTED"
        elif "ERROR" in statuses or had_errors:
            status = "ERROR"
        else:
            status = "OK"
        first = self.calls[0] if self.calls else None
        env: dict[str, Any] = {
            "protocol": PROTOCOL,
            "id": new_id("env"),
            "traceId": self.trace_id,
            "issuedAt": utcnow().isoformat().replace("+00:00", "Z"),
            "source": SOURCE,
            "target": self.target,
            "coordinate": first.coordinate if first else None,
            "capability": first.capability if first else None,
            "status": status,
            "boundary": next((c.boundary for c in self.calls if c.boundary), None),
        }
        if len(self.calls) > 1:
            env["operations"] = [
                {"operation": c.operation, "coordinate": c.coordinate, "capability": c.capability, "status": c.status}
                for c in self.calls
            ]
        return env
