"""Interaction tracing's errors: one class per code, each with its HTTP status."""

from __future__ import annotations

from cairn.app.core.errors import BadInput, Conflict


class TraceContextInvalid(BadInput):
    """``trace`` is incomplete or malformed (400 ``TRACE_CONTEXT_INVALID``)."""

    code = "TRACE_CONTEXT_INVALID"


class InvocationIdReused(Conflict):
    """An ``X-Client-Invocation-Id`` sent again for a different call (409 ``IDEMPOTENCY_KEY_REUSED``)."""

    code = "IDEMPOTENCY_KEY_REUSED"


class InvocationInProgress(Conflict):
    """The call with this ``X-Client-Invocation-Id`` is still running (409 ``INVOCATION_IN_PROGRESS``)."""

    code = "INVOCATION_IN_PROGRESS"
