"""Agent memory's errors: one class per code, each with its HTTP status."""

from __future__ import annotations

from cairn.app.core.errors import BadInput, CairnError, Conflict, ContextSetScopeRefused, Forbidden

__all__ = [
    "ContextSetScopeRefused",
    "MemoryDisabled",
    "MemoryEmpty",
    "MemoryFull",
    "MemoryPersonalData",
    "MemoryRateLimited",
]


class MemoryRateLimited(CairnError):
    """Too many remembers by one credential in the last hour (429 ``AGENT_MEMORY_RATE_LIMITED``, ``retryAfter``)."""

    code = "AGENT_MEMORY_RATE_LIMITED"
    http_status = 429


class MemoryPersonalData(BadInput):
    """A namespace or key holds personal data (400 ``AGENT_MEMORY_PERSONAL_DATA``)."""

    code = "AGENT_MEMORY_PERSONAL_DATA"


class MemoryEmpty(BadInput):
    """The text is nothing but personal data once masked (400 ``AGENT_MEMORY_EMPTY``)."""

    code = "AGENT_MEMORY_EMPTY"


class MemoryDisabled(Forbidden):
    """Agent memory is off in the workspace (403 ``AGENT_MEMORY_DISABLED``)."""

    code = "AGENT_MEMORY_DISABLED"


class MemoryFull(Conflict):
    """The most memory versions per member per workspace are stored (409 ``AGENT_MEMORY_FULL``, ``limit``)."""

    code = "AGENT_MEMORY_FULL"


# ContextSetScopeRefused (403 AGENT_CONTEXT_SET_SCOPE_REFUSED) is shared by every package that
# reads within a context set's scope (documents, packs, memory, context sets, templates): it
# lives in app/core/errors.py and is re-exported here for memory's callers.
