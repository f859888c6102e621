"""Agent memory's errors: one class per code, each with its HTTP status."""

from __future__ import annotations

from app.core.errors import CairnError


class MemoryRateLimited(CairnError):
    """Too many remembers by one credential in the last hour (429 ``AGENT_MEMORY_RATE_LIMITED``, ``retryAfter``)."""

    code = "AGENT_MEMORY_RATE_LIMITED"
    http_status = 429
